"""`hub runs rerun RUN`: a compile, profile or invoke run made again from its record, and what
matched.

The record says everything the run took: its component (by runtime and run type), its options
(``option.*`` params), its model and data files by content (the stored ``input``,
``input_data`` and ``calibration_data`` artifacts), its device and, for a run in a local
container, its image by tag and digest. The rerun takes all of these from the store, never
from the paths the first run was given, and runs through `execute` like `hub exec` (leases,
timeouts and cancelling included). The new run carries the tag ``rerun_of`` with the original's
id.

By default it runs on the recorded image (`ops.recorded_image`: by tag or digest; an image that
is gone is refused in one line saying what differs, before anything runs); ``image="current"``
runs on today's image instead and says so.

What is compared: an invoke's outputs bit for bit; a profile's latency through the profile
comparison (median delta, its 95 % CI, significance) and whether their recorded conditions make
them comparable; a compile's artifacts by hash; where the runtime declares its compile not
deterministic (``deterministic_compile``), differing artifacts are compared by their outputs on
the same inputs.
"""

from __future__ import annotations

from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.errors import UsageError
from edgehub.ops.cancel import Cancellation
from edgehub.ops.execute import ExecRequest, execute, step_components
from edgehub.ops.project import Project, Subscriber
from edgehub.ops.recorded_image import IMAGE_CHOICES, recorded_image, short_digest

if TYPE_CHECKING:
    from edgehub.ops.reports import RunReport
    from edgehub.ops.sweep_rerun import SweepRerun
    from edgehub.tracking.comparability import Comparability
    from edgehub.tracking.profile_compare import ProfileComparison
    from edgehub.tracking.records import RunRecord

__all__ = ["IMAGE_CHOICES", "OutputMatch", "RerunReport", "rerun"]

RERUN_TAG = "rerun_of"
STEPS = {"COMPILE": "compile", "PROFILE": "profile", "INFERENCE": "invoke"}
_DATA_OPTIONS = ("input_data", "calibration_data", "param_replacement")


@dataclass(frozen=True)
class OutputMatch:
    """One output of two invokes: identical bit for bit, or how far apart."""

    name: str
    identical: bool
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "identical": self.identical, "note": self.note}


@dataclass
class RerunReport:
    """The original run, its rerun, the image it ran on, and what matched."""

    original: RunRecord
    rerun: RunReport
    image: str
    matched: bool | None = None  # None: nothing to judge bit for bit (a profile)
    summary: list[str] = field(default_factory=list)
    outputs: list[OutputMatch] = field(default_factory=list)
    artifacts: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)
    latency: ProfileComparison | None = None
    comparability: Comparability | None = None
    children: list[RerunReport] = field(default_factory=list)  # a compile's steps, rerun

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "original": self.original.run_id,
            "rerun": self.rerun.to_dict(),
            "image": self.image,
            "matched": self.matched,
            "summary": list(self.summary),
            "outputs": [o.to_dict() for o in self.outputs],
            "artifacts": {k: {"original": a, "rerun": b} for k, (a, b) in self.artifacts.items()},
        }
        if self.latency is not None:
            data["latency"] = self.latency.to_dict()
        if self.comparability is not None:
            data["comparability"] = self.comparability.to_dict()
        data["children"] = [child.to_dict() for child in self.children]
        return data


def rerun(
    project: Project,
    ref: str,
    *,
    device: str | None = None,
    image: str = "recorded",
    children: bool = False,
    subscriber: Subscriber | None = None,
    cancel: Cancellation | None = None,
) -> RerunReport | SweepRerun:
    """Run the compile, profile or invoke run ``ref`` again from its record (on ``device``
    instead of the recorded one if given; ``image`` "recorded" or "current") and compare.
    With ``children``, a compile's profile and invoke runs (a pipeline's steps) are rerun
    after it, oldest first, on the model the rerun compiled. A sweep reruns as a whole
    (`edgehub.ops.sweep_rerun`)."""
    if image not in IMAGE_CHOICES:
        raise UsageError(
            f"{{field}} must be one of {', '.join(IMAGE_CHOICES)}, got {image!r}", field="image"
        )
    with closing(project.store()) as store:
        original = store.get_run(ref)
        kids = store.list_runs(parent_run_id=original.run_id, limit=None) if children else []
    if original.run_type == "SWEEP" and not children:
        from edgehub.ops.sweep_rerun import rerun_sweep

        return rerun_sweep(
            project, original, device=device, image=image, subscriber=subscriber, cancel=cancel
        )
    if children and original.run_type != "COMPILE":
        raise UsageError(
            f"{{field}} reruns the runs made from a compile; run {original.run_id[:8]} is "
            f"{original.run_type}",
            field="children",
        )
    steps = [kid for kid in sorted(kids, key=lambda r: r.started_at)
             if kid.run_type in ("PROFILE", "INFERENCE")]  # fmt: skip
    images = {r.run_id: recorded_image(r, image) for r in (original, *steps)}  # refused up front
    run = _Runner(project, subscriber, cancel)
    result, again = _rerun_one(run, original, device, images[original.run_id], None)
    model = _artifact_path(again, "path")
    for kid in steps:
        if model is not None:
            result.children.append(_rerun_one(run, kid, device, images[kid.run_id], model)[0])
    return result


@dataclass(frozen=True)
class _Runner:
    """Runs one step through `execute` on the project, as the rerun was asked to."""

    project: Project
    subscriber: Subscriber | None
    cancel: Cancellation | None

    def __call__(self, request: ExecRequest) -> tuple[RunReport, RunRecord]:
        """The step's report and its run's record."""
        from edgehub.ops.reports import RunReport

        report = execute(self.project, request, subscriber=self.subscriber, cancel=self.cancel)
        assert isinstance(report, RunReport), "one step makes one run"
        with closing(self.project.store()) as store:
            return report, store.get_run(report.run_id)


def _rerun_one(
    run: _Runner,
    original: RunRecord,
    device: str | None,
    image: tuple[dict[str, str], str],
    model: Path | None,
) -> tuple[RerunReport, RunRecord]:
    """The rerun of ``original`` and what matched; its run's record."""
    request = _request(original, device)
    if model is not None:
        request.model = model  # a child of a compile rerun: the model it compiled
    request.image_tags, where = image
    report, again = run(request)
    result = RerunReport(original, report, where)
    step = request.step
    if step == "invoke":
        _compare_outputs(result, original, again)
    elif step == "profile":
        _compare_latency(result, original, again)
    else:
        _compare_compiles(run, result, original, again)
    return result, again


# -- the request from the record ---------------------------------------------------------------


def _request(original: RunRecord, device: str | None) -> ExecRequest:
    from edgehub.core.runtimes import get_runtime

    what = f"run {original.run_id[:8]} ({original.run_type} {original.name})"
    step = STEPS.get(original.run_type)
    if step is None:
        raise UsageError(
            f"{what}: rerun re-creates compile, profile, invoke and sweep runs; run its steps "
            "instead"
        )
    if original.status == "RUNNING":
        raise UsageError(f"{what} is still running; rerun it once it has ended")
    if not original.runtime:
        raise UsageError(f"{what} recorded no runtime; it cannot be re-created")
    runtime = get_runtime(original.runtime)
    component = step_components(runtime, step)[step]
    if original.component and original.component != component.__name__:
        raise UsageError(
            f"{what} ran {original.component}, not {runtime.name}'s {component.__name__}; "
            "rerun re-creates runs of hub exec's components"
        )
    options = _options(original, component, what)
    model = _stored(original, "input", what)
    inputs = None
    if step == "invoke":
        inputs = _stored(original, "input_data", what)
        options.pop("input_shape", None)  # it shapes random inputs; the recorded ones are given
    return ExecRequest(
        step=step,
        runtime=runtime.name,
        model=model,
        device=device or original.device,
        options={step: options},
        inputs=inputs,
        name=original.name,
        tags={RERUN_TAG: original.run_id},
        no_cache=True,  # a rerun builds again: that is what it checks
    )


def _options(original: RunRecord, component: type[Any], what: str) -> dict[str, Any]:
    """The options the run recorded; a data option from its stored copy."""
    wanted = set(component.keyword_options()) - {"device", "devices"}
    recorded = {
        key.removeprefix("option."): value
        for key, value in original.params.items()
        if key.startswith("option.")
    }
    options = {k: v for k, v in recorded.items() if k in wanted}
    for name in _DATA_OPTIONS:  # a path is recorded as given, or not at all: take the copy
        if name in wanted and (options.get(name) is not None or name in original.artifacts):
            options[name] = _stored(original, name, what)
    missing = sorted(wanted - set(options))
    if missing:
        raise UsageError(
            f"{what} did not record option(s) {', '.join(missing)} (values other than text, "
            "numbers and lists are not kept); it cannot be re-created"
        )
    return options


def _stored(original: RunRecord, name: str, what: str) -> Path:
    """The stored copy of the run's artifact ``name``, checked against its hash."""
    from edgehub.tracking.artifacts import hash_path

    artifact = original.artifacts.get(name)
    if artifact is None or not artifact.is_stored or not artifact.sha256:
        raise UsageError(
            f"{what} has no stored {name.replace('_', ' ')} (only its path was recorded); it "
            "cannot be re-created"
        )
    path = Path(artifact.file_path)
    if not path.exists() or hash_path(path) != artifact.sha256:
        raise UsageError(
            f"{what}'s stored {name.replace('_', ' ')} {path} is missing or damaged; "
            "`hub doctor` says what else is"
        )
    return path


# -- what matched ------------------------------------------------------------------------------


def _artifact_sha(record: RunRecord, name: str) -> str | None:
    artifact = record.artifacts.get(name)
    return artifact.sha256 if artifact is not None else None


def _compare_outputs(result: RerunReport, original: RunRecord, again: RunRecord) -> None:
    a, b = (_artifact_path(r, "output_file") for r in (original, again))
    if a is None or b is None:
        result.summary.append("outputs: not compared (a run stored no output file)")
        return
    result.outputs = compare_npz(a, b)
    result.matched = all(o.identical for o in result.outputs)
    same = sum(o.identical for o in result.outputs)
    if result.matched:
        names = ", ".join(o.name for o in result.outputs)
        result.summary.append(f"outputs: bit-exact ({same} of {len(result.outputs)}: {names})")
        return
    result.summary.append(f"outputs: DIFFER ({same} of {len(result.outputs)} bit-exact)")
    result.summary.extend(f"  {o.name}: {o.note}" for o in result.outputs if not o.identical)


def _artifact_path(record: RunRecord, name: str) -> Path | None:
    artifact = record.artifacts.get(name)
    if artifact is None or not artifact.is_stored:
        return None
    return Path(artifact.file_path)


def compare_npz(a: Path, b: Path) -> list[OutputMatch]:
    """Each array of two `.npz` files: identical (dtype, shape and bytes) or how they differ."""
    import numpy as np

    with np.load(a, allow_pickle=False) as first, np.load(b, allow_pickle=False) as second:
        found = []
        for name in sorted(set(first.files) | set(second.files)):
            if name not in first.files or name not in second.files:
                found.append(OutputMatch(name, False, "only in one of the two runs"))
                continue
            x, y = first[name], second[name]
            if x.dtype != y.dtype or x.shape != y.shape:
                note = f"{x.dtype}{list(x.shape)} against {y.dtype}{list(y.shape)}"
                found.append(OutputMatch(name, False, note))
            elif x.tobytes() == y.tobytes():
                found.append(OutputMatch(name, True))
            else:
                diff = np.abs(x.astype(np.float64) - y.astype(np.float64))
                found.append(OutputMatch(name, False, f"max abs difference {diff.max():.6g}"))
    return found


def _compare_latency(result: RerunReport, original: RunRecord, again: RunRecord) -> None:
    from edgehub.tracking.comparability import check_comparability
    from edgehub.tracking.profile_compare import compare_profiles

    try:
        result.latency = compare_profiles(original, again)
    except UsageError as why:
        result.summary.append(f"latency: not compared ({why})")
    else:
        result.summary.append(f"latency: {result.latency.verdict}")
    result.comparability = check_comparability(original.environment, again.environment)
    if not result.comparability.comparable:
        reasons = "; ".join(result.comparability.reasons)
        result.summary.append(f"conditions: NOT COMPARABLE ({reasons})")


def _compare_compiles(
    run: _Runner, result: RerunReport, original: RunRecord, again: RunRecord
) -> None:
    a, b = _artifact_sha(original, "path"), _artifact_sha(again, "path")
    result.artifacts["path"] = (a, b)
    if a is not None and a == b:
        result.matched = True
        result.summary.append(f"artifacts: identical (sha256 {a[:12]})")
        return
    from edgehub.core.runtimes import get_runtime

    runtime = get_runtime(original.runtime or "")  # the rerun found it
    first, second = _artifact_path(original, "path"), _artifact_path(again, "path")
    if runtime.deterministic_compile or first is None or second is None:
        result.matched = False
        result.summary.append(
            f"artifacts: DIFFER (sha256 {short_digest(a)} against {short_digest(b)})"
        )
        return
    result.summary.append(
        f"artifacts differ ({short_digest(a)} against {short_digest(b)}): {runtime.name}'s "
        "compile is not guaranteed to be deterministic, so their outputs on the same inputs "
        "are compared"
    )
    outputs = _invoke_both(run, original, first, second)
    result.outputs = outputs
    result.matched = all(o.identical for o in outputs)
    verdict = "bit-exact" if result.matched else "DIFFER"
    result.summary.append(f"outputs of the two compiled models: {verdict}")
    result.summary.extend(f"  {o.name}: {o.note}" for o in outputs if not o.identical)


def _invoke_both(run: _Runner, original: RunRecord, first: Path, second: Path) -> list[OutputMatch]:
    """Invoke both compiled models on the same (random, seed 0) inputs; their outputs."""
    runtime = original.runtime or ""
    tags = {RERUN_TAG: original.run_id}
    outputs: list[Path] = []
    inputs: Path | None = None
    for model in (first, second):
        request = ExecRequest(
            step="invoke", runtime=runtime, model=model, device=original.device,
            inputs=inputs, tags=tags,
        )  # fmt: skip
        _, record = run(request)
        inputs = inputs or _artifact_path(record, "input_data")
        output = _artifact_path(record, "output_file")
        if output is None:
            return [OutputMatch("-", False, "an invoke stored no output file")]
        outputs.append(output)
    return compare_npz(outputs[0], outputs[1])
