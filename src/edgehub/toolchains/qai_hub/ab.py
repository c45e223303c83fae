"""`hub exec ab` on a Qualcomm AI Hub device: one profile job per model, both submitted before
either is waited for. The service runs each job in its own device session, so their
per-iteration times are two independent samples, not interleaved ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.errors import ProfileError
from edgehub.toolchains.qai_hub.assets import uploaded_model
from edgehub.toolchains.qai_hub.client import hub_call
from edgehub.toolchains.qai_hub.devices import hub_devices, start_on_device
from edgehub.toolchains.qai_hub.jobs import wait_for_job
from edgehub.toolchains.qai_hub.profile_summary import ProfileSummary, summarize_profile

if TYPE_CHECKING:
    from edgehub.core.context import HubContext


@dataclass
class HubProfile:
    """One model's finished profile job: its id and URL, the raw profile and its summary."""

    job_id: str
    url: str
    profile: dict[str, Any]
    summary: ProfileSummary

    def document(self) -> dict[str, Any]:
        """The ``profile.json`` of the model's run, as a `hub exec profile` on AI Hub writes."""
        return {
            "job": {"id": self.job_id, "url": self.url},
            "stats": self.summary.metrics,
            "samples_us": self.summary.samples_us,
            "compute_units": self.summary.compute_units,
            "layers": self.summary.layers,
            "qai_hub_profile": self.profile,
        }


def profile_pair(
    ctx: HubContext, models: dict[str, Path], *, device: str, component: type[Any]
) -> dict[str, HubProfile]:
    """Profile each of ``models`` (side -> file) on ``device``: submit one job per model, then
    wait for them in turn. Each job's id and URL are logged on the current run
    (``qai_hub_profile_job_id_<side>``) as soon as it is submitted."""
    hub, config = start_on_device(ctx, device, component, ProfileError)
    options = config.job_options("profile")
    ctx.client.log_param("qai_hub_profile_options", options)
    jobs: dict[str, Any] = {}
    for side, path in models.items():
        made = hub_call(
            hub,
            ProfileError,
            f"submitting the profile job of {side.upper()}",
            hub.submit_inference_job,
            model=uploaded_model(ctx, path, ProfileError),
            device=hub_devices(ctx, [device], component, ProfileError),
            inputs=None,
            name=f"{path.stem} ab {side.upper()}",
            options=options,
            profile=True,
        )
        job = made[0] if isinstance(made, list) else made
        jobs[side] = job
        ctx.client.log_params(
            {
                f"qai_hub_profile_job_id_{side}": job.job_id,
                f"qai_hub_profile_job_url_{side}": job.url,
            }
        )
        ctx.events.info(f"qai_hub profile job {job.job_id} ({side.upper()}): {job.url}")
    found: dict[str, HubProfile] = {}
    for side, job in jobs.items():
        wait_for_job(ctx, "profile", job, config, ProfileError)
        found[side] = fetched_profile(hub, job)
        if not found[side].summary.samples_us:
            raise ProfileError(
                f"qai_hub profile job {job.job_id} reported no per-iteration inference times "
                f"({job.url}), which the A/B verdict needs; profile each model and compare "
                "the estimates by eye"
            )
    return found


def fetched_profile(hub: Any, job: Any) -> HubProfile:
    """The finished profile job ``job``'s profile, downloaded and summarized."""
    profile = hub_call(hub, ProfileError, "downloading the profile", job.download_profile)
    if not isinstance(profile, dict) or not profile.get("execution_summary"):
        raise ProfileError(f"qai_hub profile job {job.job_id} returned no profile ({job.url})")
    return HubProfile(str(job.job_id), str(job.url), profile, summarize_profile(profile))
