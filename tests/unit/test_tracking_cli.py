"""`hub runs list` filters and `hub runs compare` of two profile runs, through `hub`'s main().

The profile runs here are recorded by a @hub_run function that writes the same profile.json
shape the ONNX Runtime profiler stores (``samples_us``), so no container is needed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from edgehub.cli.main import EPILOG, main
from edgehub.core import HubContext, hub_run
from edgehub.errors import EXIT_REGRESSION


@hub_run("PROFILE", name="fake-profile")
def fake_profile(ctx: HubContext, samples_us: list[float], device: str) -> None:
    ctx.client.log_param("$runtime", "onnxruntime")
    ctx.client.log_param("device", device)
    ctx.client.log_metric("$latency", float(np.median(samples_us)) / 1000)
    path = ctx.artifact_dir / "profile.json"
    path.write_text(json.dumps({"samples_us": samples_us}))
    ctx.client.log_artifact(path, name="output_file")


@pytest.fixture
def project(_isolated_cwd: Path) -> dict[str, str]:
    (_isolated_cwd / "hub.toml").write_text('[project]\nname = "p"\nstore = ".hub"\n')
    rng = np.random.default_rng(3)
    ids = {}
    with HubContext(project_name="p", artifact_base_dir=_isolated_cwd / ".hub") as ctx:
        for label, scale, device in (("base", 1.0, "board"), ("same", 1.0, "board"),
                                     ("slow", 1.25, "other")):  # fmt: skip
            samples = (scale * (800 + rng.gamma(2.0, 20.0, size=500))).round(3).tolist()
            fake_profile(ctx, samples, device)
            ids[label] = ctx.store.list_runs(limit=1)[0].run_id
    return ids


def _hub(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_runs_list_filters(project: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _hub(capsys, "runs", "list", "--device", "other", "--json")
    assert code == 0 and [r["run_id"] for r in json.loads(out)] == [project["slow"]]
    code, out, _ = _hub(
        capsys, "runs", "list", "--type", "profile", "--status", "finished", "--runtime",
        "onnxruntime", "--json",
    )  # fmt: skip
    assert len(json.loads(out)) == 3
    code, out, _ = _hub(capsys, "runs", "list", "--runtime", "tflite", "--json")
    assert json.loads(out) == []
    code, out, err = _hub(capsys, "runs", "list", "--status", "done")
    assert code == 2 and "unknown run status" in err
    code, out, _ = _hub(capsys, "runs", "list")
    assert code == 0 and "board" in out and "other" in out


def test_compare_of_two_profiles_of_the_same_speed_passes_the_gate(
    project: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _hub(
        capsys, "runs", "compare", project["base"], project["same"], "--max-regression", "5%"
    )
    assert code == 0, out
    assert "median" in out and "p99" in out and "within 5%" in out


def test_compare_flags_a_slower_profile_with_its_own_exit_code(
    project: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = _hub(
        capsys, "runs", "compare", project["base"][:8], "latest:profile",
        "--max-regression", "5%", "--json",
    )  # fmt: skip
    assert code == EXIT_REGRESSION == 5
    latency = json.loads(out)["latency"]
    assert latency["regressed"] is True and latency["median"]["ci_pct"][0] > 5
    code, _, _ = _hub(capsys, "runs", "compare", project["base"], project["slow"])
    assert code == 0  # no gate asked for: just the numbers
    assert "5  `hub runs compare --max-regression`" in EPILOG


def test_max_regression_needs_profile_runs(
    project: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    with HubContext(project_name="p", artifact_base_dir=Path(".hub")) as ctx:
        hub_run("CUSTOM", name="other")(lambda ctx: None)(ctx)
    code, _, err = _hub(
        capsys, "runs", "compare", project["base"], "latest:custom", "--max-regression", "5%"
    )
    assert code == 2 and "compares two profile runs" in err
    with pytest.raises(SystemExit) as exited:  # argparse's own usage error
        main(["runs", "compare", project["base"], project["slow"], "--max-regression", "x%"])
    assert exited.value.code == 2 and "not a percentage" in capsys.readouterr().err


def test_show_of_a_prefix_with_a_wildcard_is_literal(
    project: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _hub(capsys, "runs", "show", "%")
    assert code == 2 and "no run matches '%'" in err
    code, out, _ = _hub(capsys, "runs", "show", project["slow"][:10], "--json")
    assert code == 0 and json.loads(out)["device"] == "other"
