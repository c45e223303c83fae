"""What a job costs the process running it (its peak resident memory), and the most memory it
may use here (`memory_ceiling`)."""

from __future__ import annotations


def peak_rss_mb() -> float | None:
    """High-water resident set size of this process in MiB (VmHWM, else ru_maxrss)."""
    from .env import proc_mib

    found = proc_mib("/proc/self/status", "VmHWM")
    if found is not None:
        return found
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
    memory cgroup's limit (a container's); ``None`` when neither can be told."""
    import os

    found: list[int] = []
    try:
        found.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        pass
    for path in _LIMIT_FILES:
        try:
            with open(path, encoding="utf-8") as fh:
                text = fh.read().strip()
        except OSError:
            continue
        if text.isdigit():
            found.append(int(text))
    positive = [size for size in found if size > 0]
    return min(positive) if positive else None
