"""Building and naming the pinned toolchain images.

Each runtime has ``images/<runtime>/Dockerfile`` and ``requirements.lock`` (exact versions, one
sha256 per wheel); its tag is derived from those two files. The wheels are downloaded on the
host into a persistent cache, verified against the lock and copied into the build context: the
build itself never talks to a Python package index. Each name here loads its module on first use.
"""

from typing import TYPE_CHECKING

from edgehub.lazy import names_from

if TYPE_CHECKING:
    from edgehub.images.build import build_image
    from edgehub.images.catalog import (
        EXTERNAL_BASE_MARKER,
        RUNTIMES,
        ImageSpec,
        available_runtimes,
        default_base,
        image_tag,
        images_dir,
        needs_external_base,
        runtime_dir,
    )
    from edgehub.images.status import (
        ImageStatus,
        docker_client,
        image_attrs,
        image_status,
        list_images,
        require_image,
    )
    from edgehub.images.wheels import LockEntry, read_lock, wheel_cache_dir

__all__ = [
    "EXTERNAL_BASE_MARKER",
    "RUNTIMES",
    "ImageSpec",
    "ImageStatus",
    "LockEntry",
    "available_runtimes",
    "build_image",
    "default_base",
    "docker_client",
    "image_attrs",
    "image_status",
    "image_tag",
    "images_dir",
    "list_images",
    "needs_external_base",
    "read_lock",
    "require_image",
    "runtime_dir",
    "wheel_cache_dir",
]

# each name's module (PEP 562: loaded when the name is first used)
_MODULES = {
    "build_image": "build",
    **dict.fromkeys(
        ["EXTERNAL_BASE_MARKER", "RUNTIMES", "ImageSpec", "available_runtimes", "default_base",
         "image_tag", "images_dir", "needs_external_base", "runtime_dir"],
        "catalog",
    ),
    **dict.fromkeys(
        ["ImageStatus", "docker_client", "image_attrs", "image_status", "list_images",
         "require_image"],
        "status",
    ),
    **dict.fromkeys(["LockEntry", "read_lock", "wheel_cache_dir"], "wheels"),
}  # fmt: skip


__getattr__ = names_from(__name__, _MODULES)
