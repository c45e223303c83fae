"""The flags of `hub exec`, in sets that verbs share through argparse ``parents``.

A verb's parser is built from the sets it takes (`cli.exec_cmd.VERBS`), so a flag a verb does
not take is argparse's own "unrecognized argument"; each `Flags` remembers its flag names, so
that error can say which verbs take it. The value types of the flags are here too."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.errors import UsageError

if TYPE_CHECKING:
    from edgehub.ops.project import Project


class Flags:
    """A parent parser (argparse ``parents``) holding one set of flags, under its own heading
    in ``--help`` when given a ``title``; ``names`` lists its option strings."""

    def __init__(self, title: str | None = None, description: str | None = None) -> None:
        self.parser = argparse.ArgumentParser(add_help=False)
        self._target: Any = (
            self.parser.add_argument_group(title, description) if title else self.parser
        )
        self.names: list[str] = []

    def add_argument(self, *names: str, **kwargs: Any) -> argparse.Action:
        self.names += [name for name in names if name.startswith("-")]
        action: argparse.Action = self._target.add_argument(*names, **kwargs)
        return action


def project_of(args: argparse.Namespace) -> Project:
    """The project of ``--config`` (else of the nearest hub.toml) a command works on."""
    from edgehub.ops.project import open_project

    return open_project(args.config)


def path(text: str) -> Path:
    """A path argument; an empty one (which would mean the current directory) is refused."""
    if not text.strip():
        raise argparse.ArgumentTypeError("the path is empty; give a file")
    return Path(text)


def seconds(text: str, high: float = math.inf, example: str = "--lease-timeout 600") -> float:
    """A finite number of seconds from 0 to ``high`` (``--lease-timeout``); ``example``: the
    flag and a value, for the error."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or not 0 <= value <= high:
        span = ">= 0" if high == math.inf else f"from 0 to {high:g}"
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number of seconds {span}; give e.g. {example}"
        )
    return value


def positive_seconds(text: str) -> float:
    """A finite number of seconds above 0 (``--timeout``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text} must be a number of seconds above 0")
    return value


def fraction(text: str) -> float:
    """A share given as ``5%`` or ``0.05`` (a regression limit, a tolerance)."""
    raw = text.strip()
    try:
        value = float(raw[:-1]) / 100.0 if raw.endswith("%") else float(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a percentage such as 5%") from None
    if not 0 <= value < 10:
        raise argparse.ArgumentTypeError(f"{text!r} is out of range; give e.g. 5% or 0.05")
    return value


def split_pair(text: str, flag: str) -> tuple[str, str]:
    """``KEY=VALUE`` of ``flag`` (``--tag``, ``--set``) as (key, value)."""
    if "=" not in text:
        raise UsageError(f"{flag} needs KEY=VALUE, got {text!r}")
    key, value = text.split("=", 1)
    return key.strip(), value


def tags(args: argparse.Namespace) -> dict[str, str]:
    return dict(split_pair(t, "--tag") for t in args.tag)


def single(*names: str, **kwargs: Any) -> Flags:
    """A set of one flag."""
    flags = Flags()
    flags.add_argument(*names, **kwargs)
    return flags


def shared_flag_sets() -> dict[str, Flags]:
    """The sets several verbs take, by the names `cli.exec_cmd.VERBS` gives them."""
    common = Flags()  # every verb
    common.add_argument("--device", help="device from hub.toml (default: the first that fits)")
    common.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a component option, e.g. per_channel=true, runs=200, input_shape=1,3,224,224; "
        "prefix with compile./profile./invoke. to target one step of a pipeline",
    )
    common.add_argument("--json", action="store_true", help="print results as JSON")
    limits = Flags()  # how long to wait for the device, how long the run may take once held
    limits.add_argument(
        "--lease-timeout",
        type=seconds,
        metavar="SECONDS",
        help="how long to wait for a device another measurement holds (default 3600)",
    )
    limits.add_argument(
        "--timeout",
        type=positive_seconds,
        metavar="SECONDS",
        help="stop the run (FAILED, exit 3) if it runs longer once the device is held "
        "(a sweep: each cell; ab: the whole comparison)",
    )
    compile_ = Flags()  # what a compile step takes besides its options
    compile_.add_argument(
        "--transform",
        nargs="?",
        const="auto",
        metavar="BACKEND",
        help="rewrite the model with a deployment backend's graph patterns before compiling "
        "(tensorrt, tflite; default: the active or only installed backend)",
    )
    compile_.add_argument(
        "--no-cache",
        action="store_true",
        help="compile even where a stored compile of the same model, options, data, image and "
        "device could be reused",
    )
    return {
        "common": common,
        "tag": single("--tag", action="append", default=[], metavar="KEY=VALUE"),
        "name": single("--name", help="a name for the run"),
        "limits": limits,
        "input": single(
            "--input",
            type=path,
            metavar="FILE.npz|DIR",
            help="input tensors by name; a directory of .npz samples: profile runs them all, "
            "invoke the first",
        ),
        "from_run": single(
            "--from-run",
            metavar="RUN_ID",
            help="use the model a compile run produced ('latest': the newest compile run)",
        ),
        "from_job": single(
            "--from-job",
            metavar="JOB_ID",
            help="attach to a Qualcomm AI Hub job (or an AWS Device Farm run ARN) submitted "
            "earlier instead of submitting again",
        ),
        "compile": compile_,
    }
