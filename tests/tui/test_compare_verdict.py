"""The TUI's Compare asks `ops.runs` what `hub runs compare` asks, and shows its answer first:
NOT COMPARABLE with its reasons for two profiles recorded under different load, and the paired
rounds' verdict for the two profiles of one A/B run, in the words of the real `hub` CLI.

Profiles are recorded through the Python API the way the tracking tests record them; their
load is the `conditions.*` entries a profile records (other processes' CPU share), set here
because a test cannot load the machine reliably (as `tests/integration/
test_comparable_conditions.py` does after real profiles).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.tui.conftest import FROZEN_AT
from tests.tui.runs_screen import open_runs
from textual.widgets import DataTable

from edgehub.core import HubContext, hub_run
from edgehub.tui.app import EdgehubApp
from edgehub.tui.clock import frozen_clock
from edgehub.tui.screens.compare import CompareScreen

pytestmark = pytest.mark.asyncio

HUB = str(Path(sys.executable).with_name("hub"))
CALM = {"cpu_model": "Fixed CPU", "governor": "performance", "other_cpu_share": "0.01"}
BUSY = {**CALM, "other_cpu_share": "0.51"}  # other processes took 51 % of the CPUs


def _samples(seed: int) -> list[float]:
    rng = np.random.default_rng(seed)
    values: list[float] = (800 + rng.gamma(2.0, 20.0, size=200)).round(3).tolist()
    return values


@hub_run("PROFILE", name="loaded-profile")
def loaded_profile(ctx: HubContext, samples_us: list[float], conditions: dict[str, str]) -> None:
    ctx.client.log_param("$runtime", "onnxruntime")
    ctx.client.log_environment({f"conditions.{k}": v for k, v in conditions.items()})
    path = ctx.artifact_dir / "profile.json"
    path.write_text(json.dumps({"samples_us": samples_us}))
    ctx.client.log_artifact(path, name="output_file")


def _profile(project: Path, seed: int, conditions: dict[str, str]) -> str:
    with HubContext(project_name="tui-tests", artifact_base_dir=project / ".hub") as ctx:
        loaded_profile(ctx, _samples(seed), conditions)
        return ctx.store.list_runs(limit=1)[0].run_id


def _hub_compare(project: Path, a: str, b: str) -> str:
    done = subprocess.run(
        [HUB, "runs", "compare", a, b], cwd=project, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


async def _compare_in_tui(project: Path) -> tuple[list[str], dict[str, list[str]]]:
    """Compare the older (a) and the newer (b) of the two newest runs as a user does: mark
    them on the Runs screen, press c; the title's lines and the table's rows by key."""
    app = EdgehubApp(project / "hub.toml", clock=frozen_clock(FROZEN_AT))
    async with app.run_test(size=(120, 40)) as pilot:
        await open_runs(pilot)
        await pilot.press("down", "space", "up", "space", "c")
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, CompareScreen) and screen.comparison is not None
        title = str(screen.query_one("#compare-title").render()).splitlines()
        table = screen.query_one(DataTable)
        rows = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        return title, {row[0]: row for row in rows}


async def test_profiles_under_different_load_are_not_comparable_in_compare_as_in_the_cli(
    project: Path,
) -> None:
    calm = _profile(project, 3, CALM)
    busy = _profile(project, 4, BUSY)
    cli = _hub_compare(project, calm, busy)
    lines = cli.splitlines()
    header = lines.index("NOT COMPARABLE, by the conditions the runs recorded:")
    (reason,) = [line for line in lines[header + 1 :] if line.startswith("  - ")]
    assert reason.startswith("  - other processes took 51% of the CPUs during run B ("), cli

    title, rows = await _compare_in_tui(project)
    assert title[:2] == [lines[header], reason]  # first, and in the CLI's words
    verdict = title[2]
    assert verdict.startswith("B is ") and "(median)" in verdict
    assert verdict in cli.splitlines()  # the same verdict, in the same words
    assert title[3].startswith(f"a = {calm[:8]} loaded-profile (PROFILE")
    assert title[4].startswith(f"b = {busy[:8]} loaded-profile (PROFILE")
    assert rows["conditions.other_cpu_share"][1:] == ["0.01", "0.51", "≠"]
    assert {"median ms", "p99 ms"} <= set(rows)


async def test_calm_profiles_show_the_verdict_first_with_no_warning(project: Path) -> None:
    a = _profile(project, 3, CALM)
    b = _profile(project, 4, CALM)
    cli = _hub_compare(project, a, b)
    assert "NOT COMPARABLE" not in cli
    title, _ = await _compare_in_tui(project)
    assert not any("NOT COMPARABLE" in line for line in title)
    assert title[0].startswith("B is ") and title[0] in cli.splitlines()


async def test_the_two_profiles_of_an_ab_run_show_its_paired_verdict(project: Path) -> None:
    """For the two profiles of one `hub exec ab`, its interleaved rounds decide, not the
    unpaired samples; the TUI says so as `hub runs compare` does."""
    with (
        HubContext(project_name="tui-tests", artifact_base_dir=project / ".hub") as ctx,
        ctx.open_run("AB", "ab a vs b") as parent,
    ):
        ids: dict[str, Any] = {}
        for side, seed in (("a", 3), ("b", 4)):
            with ctx.open_run("PROFILE", f"ab {side}", parent_run_id=parent.run_id) as run:
                ctx.client.log_environment({f"conditions.{k}": v for k, v in CALM.items()})
                path = ctx.artifact_dir / "profile.json"
                path.write_text(json.dumps({"samples_us": _samples(seed)}))
                ctx.client.log_artifact(path, name="output_file")
                ids[side] = run.run_id
        ctx.client.log_params({"run_a": ids["a"], "run_b": ids["b"], "seed": 1})
        rounds = [{"ratio": r} for r in (1.01, 1.02, 1.015, 1.03, 1.01, 1.02, 1.025, 1.02)]
        summary = ctx.artifact_dir / "ab.json"
        summary.write_text(json.dumps({"rounds": rounds}))
        ctx.client.log_artifact(summary, name="ab")
    cli = _hub_compare(project, ids["a"], ids["b"])
    assert "the 8 paired rounds of their A/B run decide:" in cli
    title, _ = await _compare_in_tui(project)  # its two profiles are the newest runs
    paired = next(line for line in title if "paired rounds" in line)
    prefix = "the 8 paired rounds of their A/B run decide: "
    assert paired.startswith(prefix)
    assert paired.removeprefix(prefix) in cli.splitlines()
