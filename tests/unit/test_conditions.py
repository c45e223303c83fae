"""The conditions probe on this (Linux) host: the record's entries, and the CPU time another
process takes during the probed window counted as other processes' time, not ours."""

from __future__ import annotations

import resource
import subprocess
import sys
import time

import pytest

from edgehub.agent.conditions import ConditionsProbe, _cpu_list_count, conditions_lines

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads Linux /proc")

BURN = "import time\nend = time.process_time() + 0.6\nwhile time.process_time() < end: pass\n"


def test_a_record_has_the_machine_and_the_window() -> None:
    probe = ConditionsProbe()
    end = time.thread_time() + 0.2
    while time.thread_time() < end:  # our own work is not "other processes"
        pass
    record = probe.finish()
    for key in ("usable_cpus", "online_cpus", "host_cpus", "loop_s", "load_1m", "other_cpu_share"):
        assert key in record, record
    assert record["loop_s"] >= 0.2
    assert 0.0 <= record["other_cpu_share"] <= 1.0
    assert all(v is not None for v in record.values())
    assert conditions_lines(record)[0].startswith("conditions: other processes")


def test_another_process_cpu_time_is_counted_as_other() -> None:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    probe = ConditionsProbe()
    subprocess.run([sys.executable, "-c", BURN], check=True, timeout=120)
    record = probe.finish()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    child = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    assert child >= 0.5
    # every other process counts, so at least the child's time (less clock-tick rounding)
    assert record["other_cpu_s"] >= child - 0.1, (record, child)


def test_cpu_lists_are_counted() -> None:
    assert _cpu_list_count("0-3,6") == 5
    assert _cpu_list_count("0") == 1
    assert _cpu_list_count("") is None
    assert _cpu_list_count("zero") is None
