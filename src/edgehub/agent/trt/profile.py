"""``trt.profile``: time an engine with trtexec (needs a GPU and the full-TensorRT image).

Request::

    {"engine": PATH, "iterations": 100, "warmup_ms": 200, "duration_s": 0,
     "method": "python" | "layerwise" | "model", "extra_args": null | ["--useSpinWait", ...],
     "log": PATH, "times_json": PATH, "profile_json": null | PATH,
     "shapes": null | {input: [ints]}   (trtexec's --shapes, for an engine built for a range)}

trtexec runs ``--loadEngine`` with ``--percentile=50,90,95,99`` and ``--exportTimes`` (every
timed query); ``layerwise`` adds ``--exportProfile`` with ``--separateProfileRun`` so per-layer
timing does not slow the timed runs. The host parses the log and the JSON files.
"""

from __future__ import annotations

from ..protocol import CommandOutput, Params, UsageError
from ..report import Report
from .engine_file import engine_problem
from .trtexec import check_extra_args, require_gpu_and_trtexec, run_trtexec


def run(params: Params, report: Report) -> CommandOutput:
    engine = params.path("engine")
    iterations = params.integer("iterations", 100, minimum=1)
    warmup_ms = params.integer("warmup_ms", 200, minimum=0)
    duration_s = params.integer("duration_s", 0, minimum=0)
    method = params.choice("method", ("python", "layerwise", "model"), "layerwise")
    extra = check_extra_args(params.string_list("extra_args"))
    log = params.path("log")
    times_json = params.path("times_json")
    profile_json = params.path("profile_json", required=False)
    shapes = params.raw_value("shapes")
    params.finish()
    problem = engine_problem(str(engine))
    if problem is not None:
        raise UsageError(problem)
    if shapes is not None and not (
        isinstance(shapes, dict) and all(isinstance(v, list) for v in shapes.values())
    ):
        raise UsageError(f"shapes must be {{input: [ints]}}, got {shapes!r}")
    trtexec = require_gpu_and_trtexec("trt.profile")
    argv = [
        trtexec,
        f"--loadEngine={engine}",
        f"--iterations={iterations}",
        f"--warmUp={warmup_ms}",
        f"--duration={duration_s}",
        "--percentile=50,90,95,99",
        f"--exportTimes={times_json}",
    ]
    if shapes:
        argv.append(
            "--shapes=" + ",".join(f"{k}:{'x'.join(map(str, v))}" for k, v in shapes.items())
        )
    if method == "layerwise" and profile_json:
        argv += [f"--exportProfile={profile_json}", "--separateProfileRun"]
    assert log is not None
    run_trtexec(argv + extra, log, report)
    data = {"log": log, "times_json": times_json, "profile_json": profile_json}
    return CommandOutput(params=params.resolved, metrics={}, data=data)
