"""`hub runs report RUN... [--sweep RUN] [--eval RUN] [--fix RUN] -o report.html`: parse, call
`ops.html_report.write_report`, print the file's path (Bokeh is imported there, not here)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

REF = "a run id, a unique prefix or 'latest:<type>'"


def add_report_parser(sub: Any) -> None:
    """Add ``report`` to the ``hub runs`` actions ``sub``."""
    report = sub.add_parser(
        "report",
        help="one self-contained HTML report of profiles, evals, fixes and sweeps",
        description="Write one HTML file (Bokeh's scripts inlined: it opens offline, fetches "
        "nothing) with the latency distributions of the PROFILE runs overlaid (each "
        "percentile with its 95%% CI, the A/B verdict of each against the first, the recorded "
        "conditions, per-layer times and the profiler's overhead), each EVAL's figures and "
        "divergence curve, each FIX run's accuracy against latency and each SWEEP as heat maps "
        "and a Pareto front. Needs the report extra: pip install 'edgehub[report]'.",
    )
    report.add_argument("run_ids", metavar="RUN", nargs="*", help=REF + "; any reported type")
    report.add_argument("--sweep", action="append", default=[], metavar="RUN", help="a SWEEP run")
    report.add_argument("--eval", action="append", default=[], metavar="RUN", help="an EVAL run")
    report.add_argument("--fix", action="append", default=[], metavar="RUN", help="a FIX run")
    report.add_argument("-o", "--output", required=True, metavar="FILE", help="report.html")
    report.set_defaults(handler=_report)


def _report(args: argparse.Namespace) -> int:
    from edgehub.cli.options import project_of
    from edgehub.ops.html_report import write_report

    written = write_report(
        project_of(args),
        args.run_ids,
        Path(args.output),
        sweeps=args.sweep,
        evals=args.eval,
        fixes=args.fix,
    )
    size = written.stat().st_size
    print(f"report written to {written.resolve()} ({size / 1e6:.1f} MB)")
    return 0
