"""`hub exec profile ... --until-stable [--stable-tolerance 5%] [--stable-max-s N]
[--pin-cpus CPUS]`: the measuring flags. The first three (profile, pipeline) become the
profiler's own options (the same as ``--set until_stable=true``, ``stable_tolerance=0.05``,
``stable_max_s=N``); ``--pin-cpus`` (every step that runs on the device) goes to the request
(`ops.pinning`)."""

from __future__ import annotations

import argparse
from typing import Any

from edgehub.cli.options import Flags, seconds, single
from edgehub.errors import UsageError


def stable_flags() -> Flags:
    from edgehub.cli.options import fraction

    flags = Flags(
        "measuring",
        "time in windows until the last three windows agree in median and mean (every profiler)",
    )
    flags.add_argument(
        "--until-stable",
        action="store_true",
        default=None,
        help="repeat the timed runs in windows until the last three agree (median, mean); whether "
        "they did is recorded (stable_converged), and not converging does not fail the run",
    )
    flags.add_argument(
        "--stable-tolerance",
        type=fraction,
        metavar="PCT",
        help="how close the last three windows' medians and means must be (default 5%%)",
    )
    flags.add_argument(
        "--stable-max-s",
        type=_max_seconds,
        metavar="SECONDS",
        help="stop windowing after this long, converged or not (default 60)",
    )
    return flags


def pin_flags() -> Flags:
    return single(
        "--pin-cpus",
        metavar="CPUS",
        help="run on these CPUs (0, 0-1, 0,2-3): the container's cpuset locally, taskset -c "
        "over SSH; recorded in the conditions",
    )


def _max_seconds(text: str) -> float:
    return seconds(text, 86_400, "--stable-max-s 30")


def measure_options(args: argparse.Namespace) -> dict[str, Any]:
    """The profiler options the flags ask for (empty when none is given, or the verb takes
    none); a usage error for tolerance/time limit without ``--until-stable``."""
    keys = ("stable_tolerance", "stable_max_s")
    options = {k: v for k in keys if (v := getattr(args, k, None)) is not None}
    if not getattr(args, "until_stable", None):
        if options:
            flags = ", ".join("--" + k.replace("_", "-") for k in options)
            raise UsageError(f"{flags} apply with --until-stable; add it or drop them")
        return {}
    return {"until_stable": True, **options}


def merge_measure_options(
    args: argparse.Namespace, options: dict[str, dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """``options`` (by step, from ``--set``) with the measuring flags added to the profile
    step's; a flag wins over the same ``--set`` key."""
    extra = measure_options(args)
    if extra and "profile" in options:
        options["profile"] = {**options["profile"], **extra}
    return options
