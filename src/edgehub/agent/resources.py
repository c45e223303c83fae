"""What a job costs the process running it: its peak resident memory."""

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
