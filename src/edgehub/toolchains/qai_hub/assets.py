"""Models and datasets on the service, uploaded once per content (see `uploads`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgehub.errors import ToolchainError
from edgehub.toolchains.qai_hub.client import hub_call
from edgehub.toolchains.qai_hub.session import session_for
from edgehub.toolchains.qai_hub.uploads import file_hash

if TYPE_CHECKING:
    from edgehub.core.context import HubContext


def uploaded_model(ctx: HubContext, path: Path, failure: type[ToolchainError]) -> Any:
    """The service's ``Model`` for the file or folder ``path``; uploaded only if new."""
    uploads, upload = _uploader(ctx, failure, path.name, "upload_model", str(path))
    model = uploads.model(path, upload, session_for(ctx).hub.get_model)
    ctx.client.log_param("qai_hub_model_id", model.model_id)
    return model


def uploaded_dataset(
    ctx: HubContext, entries: Mapping[str, list[Any]], failure: type[ToolchainError], what: str
) -> Any:
    """The service's ``Dataset`` for ``entries``; uploaded only if new or nearly expired."""
    uploads, upload = _uploader(ctx, failure, f"the {what}", "upload_dataset", dict(entries))
    dataset = uploads.dataset(entries, upload, session_for(ctx).hub.get_dataset)
    ctx.client.log_param(f"qai_hub_{what.replace(' ', '_')}_dataset_id", dataset.dataset_id)
    return dataset


def _uploader(
    ctx: HubContext, failure: type[ToolchainError], what: str, call: str, content: Any
) -> tuple[Any, Callable[[], Any]]:
    """The session's upload cache, and the upload of ``content`` (the client's ``call``) it
    makes when it has no live copy: said as uploading ``what``."""
    session = session_for(ctx)
    assert session.uploads is not None

    def upload() -> Any:
        ctx.events.info(f"uploading {what} to Qualcomm AI Hub")
        send = getattr(session.hub, call)
        return hub_call(session.hub, failure, f"uploading {what}", send, content)

    return session.uploads, upload


def remember_download(ctx: HubContext, path: Path, model: Any) -> None:
    """Record a model downloaded from a job, so using it on the service uploads nothing."""
    uploads = session_for(ctx).uploads
    if uploads is not None and model is not None and getattr(model, "model_id", None):
        uploads.remember("model", file_hash(path), model, None)
