"""Uploads named by their content: ``edgehub-<sha256 prefix><suffix>``. An upload of that name
that Device Farm already processed is reused; otherwise one is created, the bytes are PUT to
its pre-signed URL, and Device Farm's processing is waited for."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from edgehub.errors import OperationCancelled, ProfileError
from edgehub.toolchains.aws.client import farm_call, farm_pages
from edgehub.toolchains.aws.transfer import put
from edgehub.toolchains.polling import pause

if TYPE_CHECKING:
    from edgehub.core.context import HubContext


PROCESS_TIMEOUT_S = 600.0


def upload_name(sha256: str, suffix: str) -> str:
    return f"edgehub-{sha256[:24]}{suffix}"


def _wait_processed(ctx: HubContext, client: Any, arn: str, what: str, poll: float) -> None:
    started = time.monotonic()
    while True:
        upload = farm_call(ProfileError, f"checking upload {what}", client.get_upload, arn=arn)[
            "upload"
        ]
        status = str(upload.get("status", ""))
        if status == "SUCCEEDED":
            return
        if status == "FAILED":
            reason = " ".join(str(upload.get("metadata") or upload.get("message") or "").split())
            raise ProfileError(
                f"AWS Device Farm refused upload {what}: {reason[:300] or 'no reason given'}"
            )
        if time.monotonic() - started > PROCESS_TIMEOUT_S:
            raise ProfileError(
                f"AWS Device Farm did not process upload {what} within {PROCESS_TIMEOUT_S:g} s"
            )
        pause(ctx, poll)
        if ctx.cancelled:
            raise OperationCancelled(f"stopped waiting for upload {what}")


def content_upload(
    ctx: HubContext,
    client: Any,
    project_arn: str,
    *,
    data: bytes,
    sha256: str,
    suffix: str,
    kind: str,
    what: str,
    poll: float,
) -> str:
    """The ARN of a processed upload holding ``data``: an earlier one of the same content, or
    a new one."""
    name = upload_name(sha256, suffix)
    listed = farm_pages(
        ProfileError, "listing uploads", client.list_uploads, "uploads", arn=project_arn, type=kind
    )
    for upload in listed:
        if upload.get("name") == name and upload.get("status") == "SUCCEEDED":
            ctx.events.info(f"aws: {what} already uploaded ({name}), reused")
            return str(upload["arn"])
    made = farm_call(
        ProfileError,
        f"creating upload {what}",
        client.create_upload,
        projectArn=project_arn,
        name=name,
        type=kind,
        contentType="application/octet-stream",
    )["upload"]
    ctx.events.info(f"aws: uploading {what} ({len(data) / 1e6:.1f} MB) as {name}")
    put(str(made["url"]), data, what)
    _wait_processed(ctx, client, str(made["arn"]), what, poll)
    return str(made["arn"])
