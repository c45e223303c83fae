"""Input tensors for a run: read from an `.npz`, or random ones from the model's signature."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.errors import UsageError

if TYPE_CHECKING:
    from edgehub.core.component.base import Component
    from edgehub.core.context import HubContext
    from edgehub.core.runtimes import RuntimeDescriptor as Runtime


def makes_own_inputs(invoker: type[Component]) -> bool:
    """Whether ``invoker.run`` declares that its input data may be None: it then makes random
    inputs (seed 0) where the model runs."""
    from edgehub.core.component.options import input_types
    from edgehub.core.values import union_members

    declared = list(input_types(invoker).values())
    if len(declared) < 2:
        return False
    return type(None) in (union_members(declared[1]) or [declared[1]])


def model_inputs(
    ctx: HubContext,
    runtime: Runtime,
    model_path: Path,
    device: str | None,
    input_path: Path | None,
    input_shape: Any = None,
) -> dict[str, Any]:
    """The arrays of ``input_path`` (of its first ``.npz`` sample, by name, for a directory),
    else random inputs (seed 0) shaped by the runtime's own inspection of the model, their
    dynamic dimensions sized by ``input_shape`` (else 1)."""
    from edgehub.toolchains.tensors import random_inputs

    if input_path is not None and input_path.is_dir():
        samples = sorted(input_path.glob("*.npz"))
        if not samples:
            raise UsageError(f"{input_path} holds no .npz samples; pass an .npz file")
        ctx.events.info(
            f"inputs: {samples[0].name}, the first of {len(samples)} samples in {input_path}"
        )
        return npz_inputs(samples[0])
    if input_path is not None:
        return npz_inputs(input_path)
    if runtime.inspect is None:
        raise UsageError(
            f"runtime {runtime.name!r} cannot read a model's inputs; pass --input FILE.npz"
        )
    signature = runtime.inspect(ctx, model_path, device)
    ctx.events.warning("no --input given: using random inputs (seed 0)")
    return random_inputs(signature["inputs"], seed=0, input_shape=input_shape)


def npz_inputs(path: Path) -> dict[str, Any]:
    """The arrays of the ``.npz`` at ``path``, within a dataset's unpacking limit. Where its
    directory and headers show it readable (`plain_npz`) they are an `NpzArrays`, read only
    if something here looks at them: an invoker passes the file on as it is (no numpy, no
    copy written); otherwise they are read now, and a bad file is an `InputDataError`."""
    from edgehub.toolchains.datasets import max_unpacked
    from edgehub.toolchains.npz_arrays import NpzArrays, plain_npz
    from edgehub.toolchains.tensors import load_npz

    limit = max_unpacked()  # as a dataset's
    if path.is_file() and plain_npz(path, limit):
        return NpzArrays(path, max_unpacked=limit)
    return load_npz(path, max_unpacked=limit)
