"""The rules that call two profiles' recorded conditions not comparable
(`edgehub.tracking.comparability`), on environments as the run store holds them."""

from __future__ import annotations

from pathlib import Path

import pytest

from edgehub.tracking.comparability import (
    MAX_OTHER_CPU_SHARE,
    MAX_TEMP_RISE_C,
    check_comparability,
)

BASE = {
    "runtime": "onnxruntime",
    "conditions.cpu_model": "Example CPU @ 2.0GHz",
    "conditions.governor": "performance",
    "conditions.cpu_quota": "max",
    "conditions.cpuset": "0-1",
    "conditions.other_cpu_share": "0.05",
    "conditions.temp_max_c": "45.0",
    "conditions.temp_max_c_end": "48.0",
}


def _with(**changes: str) -> dict[str, str]:
    env = dict(BASE)
    env.update({f"conditions.{k}": v for k, v in changes.items()})
    return env


def test_the_same_conditions_are_comparable() -> None:
    found = check_comparability(BASE, _with(other_cpu_share="0.2", temp_max_c_end="55"))
    assert found.comparable and found.reasons == [] and found.notes == []


def test_each_differing_setting_is_a_reason() -> None:
    for key, other in (
        ("cpu_model", "Other CPU"),
        ("governor", "powersave"),
        ("cpu_quota", "1.5"),
        ("cpuset", "1"),
    ):
        found = check_comparability(BASE, _with(**{key: other}))
        assert not found.comparable, key
        assert len(found.reasons) == 1 and repr(other) in found.reasons[0]


def test_a_busy_machine_in_either_run_is_a_reason() -> None:
    busy = str(MAX_OTHER_CPU_SHARE + 0.1)
    loaded = _with(other_cpu_share=busy)
    for a, b, label in ((loaded, BASE, "A"), (BASE, loaded, "B")):
        found = check_comparability(a, b)
        assert not found.comparable
        assert found.reasons == [
            f"other processes took 35% of the CPUs during run {label} (more than 25%)"
        ]
    at_limit = _with(other_cpu_share=str(MAX_OTHER_CPU_SHARE))
    assert check_comparability(at_limit, at_limit).comparable


def test_throttling_or_heating_up_is_a_reason() -> None:
    assert not check_comparability(BASE, _with(throttled="0x50005")).comparable
    assert check_comparability(_with(throttled="0"), _with(throttled="0x0")).comparable
    hot = _with(temp_max_c="40", temp_max_c_end=str(40 + MAX_TEMP_RISE_C + 1))
    found = check_comparability(hot, BASE)
    assert not found.comparable and "heated up by 16.0" in found.reasons[0]


def test_runs_without_conditions_compare_with_a_note() -> None:
    found = check_comparability({"runtime": "tflite"}, BASE)
    assert found.comparable and "run A recorded no conditions" in found.notes[0]
    found = check_comparability({}, {})
    assert found.comparable and "run A and B" in found.notes[0]


def test_a_setting_one_run_lacks_is_not_judged_but_noted() -> None:
    lacking = {k: v for k, v in BASE.items() if k != "conditions.governor"}
    found = check_comparability(lacking, BASE)
    assert found.comparable
    assert found.notes == ["frequency governor recorded for one run only"]
    assert found.to_dict()["thresholds"]["max_other_cpu_share"] == MAX_OTHER_CPU_SHARE


def test_a_number_recorded_as_nan_or_text_is_a_reason() -> None:
    for value in ("not a number", "nan", "inf"):
        found = check_comparability(BASE, _with(other_cpu_share=value))
        assert not found.comparable
        assert found.reasons == [f"run B recorded other_cpu_share = {value!r}, not a finite number"]


def test_the_probe_records_throttling_where_the_machine_exposes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Test hook: this machine exposes no throttle files, so the probe's paths are pointed at
    files written here, shaped as x86 ``thermal_throttle`` counts and a Raspberry Pi's
    firmware ``get_throttled``."""
    from edgehub.agent import conditions

    count = tmp_path / "core_throttle_count"
    count.write_text("5\n")
    monkeypatch.setattr(conditions, "_THROTTLE_COUNTS", (str(count),))
    monkeypatch.setattr(conditions, "_PI_THROTTLED", str(tmp_path / "absent"))
    probe = conditions.ConditionsProbe()
    count.write_text("8\n")
    record = probe.finish()
    assert record["throttled"] == 3
    env = {f"conditions.{k}": str(v) for k, v in record.items()}
    found = check_comparability(env, env)
    assert "run A was throttled (throttled = '3')" in found.reasons

    monkeypatch.setattr(conditions, "_THROTTLE_COUNTS", ())
    pi = tmp_path / "get_throttled"
    pi.write_text("50005\n")  # throttled now, and since boot
    monkeypatch.setattr(conditions, "_PI_THROTTLED", str(pi))
    assert conditions.ConditionsProbe().finish()["throttled"] == "0x5"
    pi.write_text("50000\n")  # only since boot: not during this loop
    assert conditions.ConditionsProbe().finish()["throttled"] == "0x0"


def test_runs_on_images_of_different_digests_compare_with_a_note_naming_both() -> None:
    """Two builds of one image (e.g. each cluster node's own): compared, and said."""
    a = {**BASE, "image_digest": "sha256:" + "a" * 64}
    b = {**BASE, "image_digest": "sha256:" + "b" * 64}
    found = check_comparability(a, b)
    assert found.comparable and found.reasons == []
    assert found.notes == [
        "ran on different images: A 'sha256:aaaaaaaaaaaa', B 'sha256:bbbbbbbbbbbb' (another build)"
    ]
    assert check_comparability(a, dict(a)).notes == []
    bare = {"image_digest": a["image_digest"]}
    assert any("different images" in note for note in check_comparability(bare, b).notes)
