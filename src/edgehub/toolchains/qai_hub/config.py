"""`QAIHubConfig`: the typed settings of the ``qai_hub`` provider, and the option strings they
make for each kind of AI Hub job. The API token is not one: it lives in qai-hub's own
configuration, written by ``qai-hub configure``.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import ClassVar, Literal

from edgehub.core.device.spec import ProviderConfig
from edgehub.errors import UsageError

JobKind = Literal["quantize", "compile", "profile", "inference"]

COMPUTE_UNITS = ("all", "npu", "gpu", "cpu")
QUANTIZE_DTYPES = ("int8", "int16", "int4")


@dataclass(frozen=True)
class QAIHubConfig(ProviderConfig):
    """Settings of the ``qai_hub`` provider (Qualcomm AI Hub).

    ``compute_unit``: ``all``, ``npu``, ``gpu`` or ``cpu`` (comma-separated for several), for
    compile, profile and inference jobs. ``qairt_version``: the QAIRT version to pin
    (``"2.31"``, ``"latest"``, ``"default"``) for profile and inference jobs.
    ``quantize_full_type``: ``int8``, ``int16``, ``w8a16``, … for TFLite compiles (AI Hub
    refuses it for ONNX targets). ``weights_dtype`` / ``activations_dtype``: the quantize job's
    types when calibration data is given. ``device_os`` / ``device_attributes`` narrow the
    device (``"[14,15)"``, ``"chipset:qualcomm-snapdragon-8gen3"``). ``options``: further
    AI Hub flags passed unchanged to the component's main job (compile, profile or inference;
    use a per-component override for flags of one job kind). ``timeout``: seconds to wait for
    each job; ``poll_interval``: seconds between status checks.
    """

    provider_type: ClassVar[str] = "qai_hub"
    batch_runner: ClassVar[str | None] = "edgehub.toolchains.qai_hub.batch:QAIHubBatchRunner"
    unpaired_ab: ClassVar[bool] = True

    compute_unit: str | None = None
    qairt_version: str | None = None
    quantize_full_type: str | None = None
    weights_dtype: str = "int8"
    activations_dtype: str = "int8"
    device_os: str = ""
    device_attributes: tuple[str, ...] = field(default_factory=tuple)
    options: str = ""
    timeout: float = 7200.0
    poll_interval: float = 10.0

    def __post_init__(self) -> None:
        if self.compute_unit is not None:
            units = [u.strip().lower() for u in self.compute_unit.split(",")]
            bad = [u for u in units if u not in COMPUTE_UNITS]
            if bad or not units:
                raise UsageError(
                    f"qai_hub compute_unit {self.compute_unit!r} is not valid; use one or "
                    f"more of {', '.join(COMPUTE_UNITS)}, comma-separated"
                )
        for name in ("weights_dtype", "activations_dtype"):
            if getattr(self, name).lower() not in QUANTIZE_DTYPES:
                raise UsageError(
                    f"qai_hub {name} {getattr(self, name)!r} is not valid; use one of "
                    f"{', '.join(QUANTIZE_DTYPES)}"
                )
        if self.timeout <= 0 or self.poll_interval < 0:
            raise UsageError("qai_hub timeout must be > 0 and poll_interval >= 0 seconds")
        try:
            shlex.split(self.options)
        except ValueError as error:
            raise UsageError(
                f"qai_hub options {self.options!r} cannot be parsed: {error}"
            ) from None

    def job_options(
        self,
        kind: JobKind,
        *,
        target_runtime: str | None = None,
        quantize_io: bool = False,
        profiler_iterations: int | None = None,
    ) -> str:
        """The ``options`` string of a ``kind`` job: the typed settings that apply to it, then
        the pass-through ``options`` (which may not repeat a flag the typed settings set)."""
        words: list[str] = []
        if kind == "compile":
            if target_runtime:
                words += ["--target_runtime", target_runtime]
            if self.compute_unit:
                words += ["--compute_unit", self.compute_unit]
            if self.quantize_full_type:
                if target_runtime == "onnx":
                    raise UsageError(
                        "qai_hub quantize_full_type does not apply to ONNX Runtime targets "
                        "(AI Hub refuses it); give calibration_data for a quantize job instead"
                    )
                words += ["--quantize_full_type", self.quantize_full_type]
            if quantize_io:
                words.append("--quantize_io")
        elif kind in ("profile", "inference"):
            if self.compute_unit:
                words += ["--compute_unit", self.compute_unit]
            if self.qairt_version:
                words += ["--qairt_version", self.qairt_version]
            if profiler_iterations is not None:
                words += ["--max_profiler_iterations", str(int(profiler_iterations))]
        extra = shlex.split(self.options) if kind != "quantize" else []
        repeated = sorted({w for w in extra if w.startswith("--")} & set(words))
        if repeated:
            raise UsageError(
                f"qai_hub options repeat {', '.join(repeated)}, which edgehub already sets from "
                "the typed settings (compute_unit, qairt_version, quantize_full_type, "
                "quantize_io, runs); set them there instead"
            )
        return shlex.join(words + extra)
