"""`hub`: the entry point. Parses arguments, runs a command, maps errors to exit codes (listed
in `EPILOG`, which `hub --help` shows). Stopped by SIGHUP or SIGTERM, a run is recorded KILLED
and its containers are removed, as for Ctrl-C."""

from __future__ import annotations

import argparse
import atexit
import os
import sys
import threading
from collections.abc import Sequence
from typing import Any, NoReturn

from edgehub import __version__
from edgehub.cli import flush_std
from edgehub.errors import EdgehubError, OperationCancelled

EXIT_INTERNAL = 1
EXIT_INTERRUPTED = 130

EPILOG = """exit codes:
  0  success
  1  internal error (run with --debug for the traceback)
  2  bad usage: arguments, hub.toml, model file or input data
  3  environment not ready: Docker daemon, image not built, device unreachable,
     run store not writable (permissions, read-only, disk full, locked)
  4  a toolchain step (compile, profile, invoke) failed
  5  `hub runs compare --max-regression` (or `hub exec ab`): B is significantly slower
     than A beyond the limit
  6  `hub exec eval --goal`: the model missed an accuracy goal
  7  `hub runs compare --max-regression`: the two profiles are not comparable (their
     recorded conditions differ; see `hub runs compare --help`; --allow-incomparable)
  8  `hub runs rerun`: the rerun did not reproduce the original (outputs or artifacts differ)
  130 interrupted (Ctrl-C); 129 / 143 stopped by SIGHUP / SIGTERM"""


class OneLineErrors(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (no usage dump), exit 2, and which
    remembers its groups of subcommands (argparse lists them only in private attributes);
    subcommand parsers are of this class too (argparse's default ``parser_class``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.command_groups: list[Any] = []  # what add_subparsers returned

    def add_subparsers(self, **kwargs: Any) -> Any:
        group = super().add_subparsers(**kwargs)
        self.command_groups.append(group)
        return group

    def error(self, message: str) -> NoReturn:
        _print_error(f"{self.prog}: {message}; see '{self.prog} --help'")
        sys.exit(2)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """``hub``'s parser; given ``argv``, only the parser of the command (and `hub exec` verb)
    it names is built in full, the others are listed only (`cli.commands`)."""
    import importlib

    from edgehub.cli.commands import COMMANDS, add_listed, words

    given = words(argv) if argv is not None else None
    parser = OneLineErrors(
        prog="hub",
        description="Compile, profile and run ML models on the hardware they ship on.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"edgehub {__version__}")
    _add_global_options(parser, top=True)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True
    named = COMMANDS[given[0]][0] if given and given[0] in COMMANDS else None
    built: set[str] = set()
    for name, (module, help_line) in COMMANDS.items():
        if given is not None and module != named:
            add_listed(commands, name, help_line)
        elif module not in built:  # one module may add several commands (devices, init, ...)
            built.add(module)
            if name == "exec":  # and of its verbs, the one given
                verbs = None if given is None else given[1:2]
                importlib.import_module(module).add_parser(commands, verbs=verbs)
            else:
                importlib.import_module(module).add_parser(commands)
    _name_leaf_parsers(parser)
    return parser


def _add_global_options(parser: argparse.ArgumentParser, *, top: bool) -> None:
    """--config, --debug and -q, accepted before the command and after it."""
    default: dict[str, Any] = {} if top else {"default": argparse.SUPPRESS}
    parser.add_argument(
        "--config", metavar="HUB_TOML", help="hub.toml to use (default: nearest)", **default
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors", **default)
    parser.add_argument("-q", "--quiet", action="store_true", help="no logs on stderr", **default)


def _name_leaf_parsers(parser: argparse.ArgumentParser) -> None:
    """Give every (sub)command's namespace its own ``prog`` (for errors about extra words),
    and let each command take the global options too."""
    if parser.get_default("listed_only"):
        return
    parser.set_defaults(command_prog=parser.prog)
    groups = parser.command_groups if isinstance(parser, OneLineErrors) else []
    children = [child for group in groups for child in group.choices.values()]
    for child in children:
        _name_leaf_parsers(child)
    if not children:
        _add_global_options(parser, top=False)


def main(argv: Sequence[str] | None = None) -> int:
    from edgehub.cli import signals, terminal

    words = sys.argv[1:] if argv is None else argv
    parser = build_parser(words)
    args, extra = parser.parse_known_args(words)
    if getattr(args, "listed_only", False):  # a command line it did not foresee: all parsers
        parser = build_parser()
        args, extra = parser.parse_known_args(words)
    if extra:
        prog = getattr(args, "command_prog", parser.prog)
        word = "argument" if len(extra) == 1 else "arguments"
        notes = getattr(args, "flag_notes", {})  # `hub exec VERB`: where a flag goes instead
        flags = dict.fromkeys(given.split("=", 1)[0] for given in extra)
        where = "".join(f"; {notes[flag]}" for flag in flags if flag in notes)
        _print_error(f"{prog}: unrecognized {word}: {' '.join(extra)}{where}; see '{prog} --help'")
        return 2
    signals.install()
    reaper = None if args.command == "doctor" else _reap_in_background()
    try:
        with terminal.guarded():  # what a command prints is shown escaped (edgehub.text)
            code: int = args.handler(args)
        return code
    except EdgehubError as error:
        if args.debug:
            raise
        stopped_by = signals.received()
        if isinstance(error, OperationCancelled) and stopped_by is not None:
            return _stopped(stopped_by)
        _print_error(error.worded(flag_of))
        return error.exit_code
    except KeyboardInterrupt:
        stopped_by = signals.received()
        if stopped_by is not None:
            return _stopped(stopped_by)
        _print_error("interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return 0
    except Exception as error:
        if args.debug:
            raise
        first = str(error).splitlines()[0] if str(error) else ""
        _print_error(
            f"internal error: {type(error).__name__}: {first} (rerun with --debug for the "
            "traceback and report it)"
        )
        return EXIT_INTERNAL
    finally:
        if reaper is not None:
            reaper.join(timeout=5)


def _stopped(signum: int) -> int:
    """Exit status and one line for `hub` stopped by SIGTERM/SIGHUP (not Ctrl-C)."""
    import signal

    _print_error(f"stopped by {signal.Signals(signum).name}")
    return 128 + signum


def _reap_in_background() -> threading.Thread:
    from edgehub.ops.cleanup import reap_leftovers_in_background

    return reap_leftovers_in_background()


# the request fields whose flag is not --<field>
_FLAGS = {"inputs": "--input", "settings": "--set"}


def flag_of(field: str) -> str:
    """The CLI's word for an operation's option ``field`` (`EdgehubError.field`)."""
    return _FLAGS.get(field, "--" + field.replace("_", "-"))


def _print_error(message: str) -> None:
    from edgehub.text import visible

    text = visible(" ".join(message.split()))  # one line, always; it may quote outside text
    print(f"hub: error: {text}", file=sys.stderr)


# A command starts by creating tens of thousands of objects that live as long as it does
# (modules, classes, functions) and hardly any garbage cycles: the collector's default (a young
# generation of 700 objects) scans them over and over, ~6% of a warm invoke's host CPU. Rarer
# collections still reclaim cycles in a long command (a sweep, the TUI).
GC_THRESHOLDS = (50_000, 20, 100)


def run() -> None:
    import gc

    gc.set_threshold(*GC_THRESHOLDS)
    exit_now(main())


_fast_exit: list[int] = []  # the exit code, once exit_now chose to skip the teardown


def _end_after_exit_handlers() -> None:
    """Registered when this module loads, before any handler of the libraries a command
    imports, so it runs after theirs (handlers run last registered first): it ends the process
    where `exit_now` asked for it. The atexit module offers no public way to run the handlers
    and then end without the interpreter's teardown; this is that way."""
    if _fast_exit:
        flush_std()
        os._exit(_fast_exit[0])


atexit.register(_end_after_exit_handlers)


def exit_now(code: int) -> NoReturn:
    """End the process with ``code`` once its output is out and its exit handlers have run,
    without tearing the interpreter down module by module (a short command's
    last step; `benchmarks/bench_ort_local.py` (e) times a warm invoke's CLI).
    Where a thread of ours still works, or a profiler or debugger watches, exit the ordinary
    way."""
    flush_std()
    main_thread = threading.main_thread()
    working = any(
        t.is_alive() and not t.daemon and t is not main_thread for t in threading.enumerate()
    )
    if not (working or sys.getprofile() is not None or sys.gettrace() is not None):
        _fast_exit[:] = [code]  # a profiler or debugger reports at the ordinary exit
    sys.exit(code)


if __name__ == "__main__":
    run()
