"""The compile cache: a compile that matches a stored one by content reuses its artifacts.

A compile's key is the sha256 of its model's content, its component, its options (with every data
option, such as ``calibration_data``, replaced by its content's hash), and its target (the
device's name, provider type and spec). A FINISHED compile recorded with that key (the tag
``cache.key``) whose image is still today's image (the tag it ran on names the digest it
recorded) and whose artifacts are intact in the store is a hit: a new COMPILE run is recorded
with the original's params, metrics, environment and artifacts (stored by content, so nothing is
copied), tagged ``cached_from`` with the original's id; no toolchain runs. Only compiles in a
local container are cached (elsewhere the toolchain cannot be pinned by a digest); ``hub exec
compile --no-cache`` always builds. A run imported from a bundle (tagged ``imported_from``) is
never a hit: its compiled model was made on another machine, whatever its records say.

A hit is served on content read now, never on a file's stamps: the key hashes the model and its
data files from their bytes (`content_hash` with ``verify``: a file swapped for another of the
same size and times is not taken for it), the original's recorded input is that model, and each
artifact reused is hashed again and must have the hash it was recorded with. A key is recorded
only on a compile whose stored input is the model the key names (the file may change while it
compiles). `benchmarks/bench_compile_cache.py` keeps a hit's wall time against the build's.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from edgehub.core.component.base import Component
    from edgehub.core.component.outputs import CompiledModel
    from edgehub.core.context import HubContext
    from edgehub.core.runtimes import RuntimeDescriptor as Runtime
    from edgehub.tracking.records import RunRecord
    from edgehub.tracking.run_log import RunLog


KEY_TAG = "cache.key"
CACHED_FROM = "cached_from"
_DATA_OPTIONS = ("calibration_data", "input_data", "param_replacement")
_NOT_COPIED = ("log",)  # the original's log says what the toolchain did, not this run


@dataclass(frozen=True)
class CacheKey:
    """A compile's key, the device it runs on and the model's content hash in it."""

    value: str
    device: str
    model_sha: str = ""


def cache_key(
    ctx: HubContext,
    compiler: type[Component],
    model: Path,
    options: dict[str, Any],
    device: str | None,
) -> CacheKey | None:
    """The key of compiling ``model`` with ``compiler`` and ``options`` (those given; the
    others take their defaults) on ``device``; None where it is not cached (a device other than
    a local container, or an option that is not plain data)."""
    from edgehub.core.component.dispatch import resolve_device
    from edgehub.tracking.artifacts import content_hash

    target = resolve_device(compiler, ctx, device)
    if not target.in_container:  # only a pinned container's compile is reproducible here
        return None
    resolved = {**compiler.keyword_options(), **options}
    for name in ("device", "devices", "name"):
        resolved.pop(name, None)
    plain: dict[str, Any] = {}
    for name, value in sorted(resolved.items()):
        if name in _DATA_OPTIONS and isinstance(value, (str, os.PathLike)):
            value = "sha256:" + content_hash(Path(value).expanduser(), verify=True)
        elif not _plain(value):
            return None  # e.g. a dict of arrays: not worth hashing here
        plain[name] = value
    model_sha = content_hash(model, verify=True)
    described = {
        "model": model_sha,
        "component": compiler.__name__,
        "options": plain,
        "target": [target.name, target.provider_type, target.spec.device_name],
    }
    text = json.dumps(described, sort_keys=True, default=str)
    return CacheKey(hashlib.sha256(text.encode()).hexdigest(), target.name, model_sha)


def _plain(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    return value is None or isinstance(value, (str, int, float, bool))


def find_cached(ctx: HubContext, key: CacheKey) -> RunRecord | None:
    """The newest FINISHED compile made in this store (not imported) with ``key`` whose image
    is still today's and whose artifacts are intact; None if there is none."""
    from edgehub.tracking.records import IMPORTED_TAG

    store = ctx.store
    rows = store.rows(
        "SELECT r.id FROM runs r JOIN tags t ON t.run_id = r.id WHERE t.name = ? AND"
        " t.value = ? AND r.status = 'FINISHED' AND r.type = 'COMPILE' AND NOT EXISTS"
        " (SELECT 1 FROM tags i WHERE i.run_id = r.id AND i.name = ?)"  # made here only
        " ORDER BY r.started_at DESC LIMIT 5",
        (KEY_TAG, key.value, IMPORTED_TAG),
    )
    for row in rows:
        record = store.get_run(str(row["id"]))
        if _compiled(record, key) and _same_image(ctx, record) and _intact(record):
            return record
    return None


def _same_image(ctx: HubContext, record: RunRecord) -> bool:
    """Whether the image the run recorded is the one its runtime would use today."""
    from edgehub import images
    from edgehub.errors import EdgehubError
    from edgehub.ops.recorded_image import names_digest

    env = record.environment
    runtime, digest = env.get("runtime"), env.get("image_digest")
    if not runtime or not digest:
        return False
    try:
        tag = ctx.image_tags.get(runtime) or images.image_tag(runtime)
        client = images.docker_client()
        try:
            attrs = images.image_attrs(tag, client=client)
        finally:
            client.close()
    except EdgehubError:
        return False
    return attrs is not None and names_digest(attrs, digest)


def _compiled(record: RunRecord | RunLog, key: CacheKey) -> bool:
    """Whether ``record`` compiled the model ``key`` names (its stored input has that hash)."""
    given = record.artifacts.get("input")
    known = given.sha256 if given is not None else None
    return known is None or not key.model_sha or known == key.model_sha


def _intact(record: RunRecord) -> bool:
    """Every stored artifact of the run is there, and each one `reuse` records again (the
    compiled model among them) has the hash it was recorded with, read from its bytes now."""
    from edgehub.tracking.artifacts import hash_path

    for artifact in record.all_artifacts:
        if artifact.device or not artifact.is_stored:
            continue
        path = Path(artifact.file_path)
        if not path.exists():
            return False
        if artifact.name not in _NOT_COPIED and hash_path(path) != artifact.sha256:
            return False
    return "path" in record.artifacts


def reuse(
    ctx: HubContext, runtime: Runtime, compiler: Component, original: RunRecord, device: str
) -> CompiledModel:
    """Record a compile run that reuses ``original``'s artifacts; its compiled model."""
    ctx.events.info(
        f"compile cache: reusing run {original.run_id[:8]} (same model, options, data, image "
        "and device); --no-cache builds again"
    )
    spec = ctx.devices[device]
    with ctx.open_run(
        "COMPILE", compiler.name, component=type(compiler).__name__, devices=[spec]
    ) as run:
        client = ctx.client
        client.log_tag(CACHED_FROM, original.run_id)
        client.log_params(original.params)
        client.log_environment(
            {k: v for k, v in original.environment.items() if k not in run.environment}
        )
        if original.metrics:
            client.log_metrics(original.metrics)
        for artifact in original.all_artifacts:
            if artifact.name in _NOT_COPIED or artifact.device or not artifact.is_stored:
                continue
            client.relog_artifact(artifact)
        model: CompiledModel = runtime.compiled_model.from_current_run(ctx)
        run.output_type = type(model).__name__
    return model


def remember(ctx: HubContext, compiled: CompiledModel, key: CacheKey) -> None:
    """Record ``key`` on the compile run that made ``compiled``, where the model it stored as
    its input is the one ``key`` names (else the model changed while it compiled: not cached)."""
    log = compiled.run_log
    if log is None or log.status not in ("FINISHED", "RUNNING"):
        return
    if not _compiled(log, key):
        ctx.events.warning(
            "compile cache: the model changed while it was compiled (its hash when the compile "
            "began differs from the copy stored with the run); this compile is not cached"
        )
        return
    ctx.store.log_tag(log.run_id, KEY_TAG, key.value)
