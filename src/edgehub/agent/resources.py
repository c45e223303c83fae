"""What a job costs the process running it (its peak resident memory), and the most memory it
may use here (`memory_ceiling`)."""

from __future__ import annotations


def peak_rss_mb() -> float | None:
    """High-water resident set size of this process in MiB (VmHWM, else ru_maxrss)."""
    try:
        with open("/proc/self/status", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return round(int(line.split()[1]) / 1024.0, 1)
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource
        import sys

        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        divisor = 1024.0 * 1024.0 if sys.platform == "darwin" else 1024.0  # bytes vs KiB
        return round(peak / divisor, 1)
    except (ImportError, OSError, ValueError):
        return None


_LIMIT_FILES = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")


def memory_ceiling() -> int | None:
    """The most memory this process may use, in bytes: the machine's RAM or, where lower, its
    memory cgroup's limit (a container's); ``None`` when neither can be read."""
    found: list[int] = []
    for path in _LIMIT_FILES:
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read().strip()
        except OSError:
            continue
        if text.isdigit():
            found.append(int(text))
    try:
        with open("/proc/meminfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("MemTotal:"):
                    found.append(int(line.split()[1]) * 1024)
                    break
    except (OSError, ValueError, IndexError):
        pass
    return min(found) if found else None
