"""The conditions a measurement ran under, read from ``/proc`` and ``/sys`` (Linux; an entry
that cannot be read is left out). Standard library only.

:class:`ConditionsProbe` is started right before a timed loop and finished right after it; its
flat record holds ``cpu_model``, ``online_cpus``, ``usable_cpus`` and ``cpu_affinity`` (e.g.
``0-1`` under ``taskset -c 0-1``), ``host_cpus``; cpu0's ``governor``, ``cur_freq_mhz``,
``max_freq_mhz``; the cgroup's ``cpu_quota`` (CPUs, or ``max``), ``cpuset`` and
``cgroup_mem_limit_mb``; ``mem_available_mb``; ``load_1m`` and ``load_1m_end``;
``other_cpu_share`` (the CPU time all other processes took during the loop, ``/proc/stat``'s
busy time less this process's, over all host CPUs and the wall time; ``other_cpu_s`` in
seconds, ``loop_s`` the wall time); ``temp_max_c`` and ``temp_max_c_end`` (the hottest
thermal zone); ``throttled``: x86 throttle events during the loop, or a Raspberry Pi's throttle
flags (hex).
"""

from __future__ import annotations

import glob
import os
import time
from typing import Any

from .env import first_value

_BUSY_FIELDS = (0, 1, 2, 5, 6, 7)  # user nice system irq softirq steal (not idle, iowait)


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read(65536).strip()
    except (OSError, UnicodeDecodeError):
        return None


def _read_first(*paths: str) -> str | None:
    """The text of the first of ``paths`` that holds any (cgroup v2's file, then v1's)."""
    return next((text for text in map(_read, paths) if text), None)


def _cpu_model() -> str | None:
    name = first_value("/proc/cpuinfo", ["model name", "Model", "Hardware"])
    return name[:120] if name else None


def _cpu_list_count(text: str | None) -> int | None:
    """How many CPUs a list such as ``0-3,6`` names."""
    if not text:
        return None
    count = 0
    try:
        for part in text.split(","):
            low, _, high = part.partition("-")
            count += int(high or low) - int(low) + 1
    except ValueError:
        return None
    return count


def _cpu_list_text(cpus: list[int]) -> str:
    """Sorted ``[0, 1, 2, 5]`` as ``0-2,5``."""
    runs: list[list[int]] = []
    for cpu in cpus:
        if runs and cpu == runs[-1][1] + 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def _host_busy() -> tuple[float | None, int]:
    """Busy seconds of all CPUs since boot, and how many CPUs ``/proc/stat`` lists."""
    text = _read("/proc/stat")
    if not text:
        return None, 0
    busy: float | None = None
    cpus = 0
    tick = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0
    for line in text.splitlines():
        words = line.split()
        if not words:
            continue
        if words[0] == "cpu":
            try:
                values = [int(v) for v in words[1:]]
                busy = sum(values[i] for i in _BUSY_FIELDS if i < len(values)) / tick
            except ValueError:
                return None, 0
        elif words[0].startswith("cpu") and words[0][3:].isdigit():
            cpus += 1
    return busy, cpus


def _own_cpu() -> float:
    times = os.times()
    return float(times.user + times.system)


def _load_1m() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except (OSError, AttributeError):
        return None


def _temp_max_c() -> float | None:
    hottest: float | None = None
    for path in sorted(glob.glob("/sys/class/thermal/thermal_zone*/temp"))[:64]:
        text = _read(path)
        try:
            value = int(text or "") / 1000.0
        except ValueError:
            continue
        hottest = value if hottest is None else max(hottest, value)
    return None if hottest is None else round(hottest, 1)


_THROTTLE_COUNTS = (
    "/sys/devices/system/cpu/cpu0/thermal_throttle/core_throttle_count",
    "/sys/devices/system/cpu/cpu0/thermal_throttle/package_throttle_count",
)
_PI_THROTTLED = "/sys/devices/platform/soc/soc:firmware/get_throttled"


def _throttle_state() -> tuple[int | None, int | None]:
    """cpu0's throttle event count (x86), and a Raspberry Pi's current throttle flags."""
    count: int | None = None
    for path in _THROTTLE_COUNTS:
        text = _read(path)
        if text and text.isdigit():
            count = (count or 0) + int(text)
    flags: int | None = None
    text = _read(_PI_THROTTLED)
    if text:
        try:
            flags = int(text, 16) & 0xF  # under-voltage, frequency capped, throttled, soft limit
        except ValueError:
            pass
    return count, flags


def _cpu_quota() -> str | None:
    text = _read("/sys/fs/cgroup/cpu.max")  # cgroup v2: "QUOTA PERIOD" or "max PERIOD"
    if text:
        quota, _, period = text.partition(" ")
    else:  # cgroup v1: a quota and a period file, the quota -1 where there is none
        v1 = ("/sys/fs/cgroup/cpu/", "/sys/fs/cgroup/cpu,cpuacct/")
        quota = _read_first(*(folder + "cpu.cfs_quota_us" for folder in v1)) or ""
        period = _read_first(*(folder + "cpu.cfs_period_us" for folder in v1)) or ""
    if quota == "max":
        return "max"
    try:
        return "max" if int(quota) < 0 else str(round(int(quota) / int(period), 2))
    except ValueError:
        return None


def _memory() -> dict[str, Any]:
    found: dict[str, Any] = {}
    for line in (_read("/proc/meminfo") or "").splitlines():
        if line.startswith("MemAvailable:"):
            try:
                found["mem_available_mb"] = int(line.split()[1]) // 1024
            except (ValueError, IndexError):
                pass
    limit = _read_first("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")
    if limit and limit != "max":
        try:
            value = int(limit) // (1024 * 1024)
            if value < 1 << 40:  # v1 says "no limit" with a huge number
                found["cgroup_mem_limit_mb"] = value
        except ValueError:
            pass
    return found


def static_conditions() -> dict[str, Any]:
    """What does not change during a loop: CPUs, frequency settings, limits, memory."""
    record: dict[str, Any] = {"cpu_model": _cpu_model()}
    record["online_cpus"] = _cpu_list_count(_read("/sys/devices/system/cpu/online"))
    try:
        affinity = sorted(os.sched_getaffinity(0))
        record["usable_cpus"] = len(affinity)
        record["cpu_affinity"] = _cpu_list_text(affinity)[:200]
    except (AttributeError, OSError):
        record["usable_cpus"] = os.cpu_count()
    freq = "/sys/devices/system/cpu/cpu0/cpufreq/"
    record["governor"] = _read(freq + "scaling_governor")
    for key, name in (("cur_freq_mhz", "scaling_cur_freq"), ("max_freq_mhz", "cpuinfo_max_freq")):
        text = _read(freq + name)
        if text and text.isdigit():
            record[key] = int(text) // 1000
    record["cpu_quota"] = _cpu_quota()
    cpuset = _read_first(
        "/sys/fs/cgroup/cpuset.cpus.effective", "/sys/fs/cgroup/cpuset/cpuset.effective_cpus"
    )
    record["cpuset"] = cpuset[:200] if cpuset else None
    record.update(_memory())
    return record


class OtherCpuMeter:
    """The share of the host's CPUs other processes took since the last call (``/proc/stat``'s
    busy time less this process's, over the wall time and all CPUs; None where unreadable)."""

    def __init__(self) -> None:
        self._busy = _host_busy()[0]
        self._own = _own_cpu()
        self._wall = time.monotonic()

    def reading(self) -> tuple[float, int, float] | None:
        """Since the last reading: the CPU seconds other processes took, the host's CPUs and
        their share (None where ``/proc/stat`` is unreadable or no time passed)."""
        busy, cpus = _host_busy()
        own, wall = _own_cpu(), time.monotonic()
        found = None
        elapsed = wall - self._wall
        if busy is not None and self._busy is not None and cpus and elapsed > 0:
            other = max(0.0, (busy - self._busy) - (own - self._own))
            found = other, cpus, min(1.0, other / (elapsed * cpus))
        self._busy, self._own, self._wall = busy, own, wall
        return found

    def __call__(self) -> float | None:
        found = self.reading()
        return None if found is None else found[2]


class ConditionsProbe:
    """Started before a timed loop, finished after it; :meth:`finish` gives the record."""

    def __init__(self) -> None:
        self.record = static_conditions()
        self.record["load_1m"] = _load_1m()
        self.record["temp_max_c"] = _temp_max_c()
        self._throttle = _throttle_state()
        self._others = OtherCpuMeter()
        self._wall = time.monotonic()

    def finish(self) -> dict[str, Any]:
        wall = time.monotonic() - self._wall
        others = self._others.reading()
        record = dict(self.record)
        record["loop_s"] = round(wall, 3)
        record["load_1m_end"] = _load_1m()
        record["temp_max_c_end"] = _temp_max_c()
        (count, flags), (count_0, flags_0) = _throttle_state(), self._throttle
        if count is not None and count_0 is not None:
            record["throttled"] = max(0, count - count_0)
        elif flags is not None or flags_0 is not None:
            record["throttled"] = hex((flags or 0) | (flags_0 or 0))
        if others is not None:
            other, cpus, share = others
            record["host_cpus"] = cpus
            record["other_cpu_s"] = round(other, 3)
            record["other_cpu_share"] = round(share, 3)
        return {k: v for k, v in record.items() if v is not None}


_SUMMARY = {
    "other_cpu_share": "other processes {:.0%} of the CPUs",
    "load_1m": "load {}",
    "governor": "governor {}",
    "cpu_quota": "CPU quota {}",
}


def conditions_lines(record: dict[str, Any]) -> list[str]:
    """A short human summary of ``record`` for the job's log."""
    parts = [text.format(record[key]) for key, text in _SUMMARY.items() if key in record]
    return [f"conditions: {', '.join(parts)}"] if parts else []
