"""Uploads to Qualcomm AI Hub reused by content hash while they live: within a context the
service object, across processes its id, kept in ``<store>/qai_hub/uploads.json``. A dataset
(which expires on the service after 30 days) is reused while more than a day of it is left.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from edgehub.fsutil import atomic_write, sha256_file

DATASET_LIFETIME_S = 30 * 24 * 3600.0
REUSE_MARGIN_S = 24 * 3600.0


def file_hash(path: Path) -> str:
    """SHA-256 of a file, or of a directory's files (relative names and contents)."""
    if not path.is_dir():
        return sha256_file(path)
    digest = hashlib.sha256()
    for item in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(item.relative_to(path).as_posix().encode() + b"\0")
        with item.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def dataset_hash(entries: Mapping[str, list[Any]]) -> str:
    """SHA-256 of dataset entries: names in order, each sample's dtype, shape and bytes."""
    import numpy as np

    digest = hashlib.sha256()
    for name, samples in entries.items():
        digest.update(f"{name}\0{len(samples)}\0".encode())
        for sample in samples:
            array = np.ascontiguousarray(sample)
            digest.update(f"{array.dtype.str}{array.shape}".encode())
            digest.update(array.tobytes())
    return digest.hexdigest()


class UploadCache:
    """Content hash -> uploaded model or dataset, in memory and in a JSON file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._objects: dict[str, Any] = {}
        self._lock = threading.Lock()

    def _records(self) -> dict[str, dict[str, Any]]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _save(self, records: dict[str, dict[str, Any]]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(records, indent=1, sort_keys=True)
        atomic_write(self.path, text.encode("utf-8"), new_mode=0o600)

    def remember(self, kind: str, digest: str, obj: Any, expires_at: float | None) -> None:
        """Record ``obj`` (a ``Model`` or ``Dataset``) as the upload of content ``digest``."""
        key = f"{kind}:{digest}"
        object_id = getattr(obj, "model_id", None) or getattr(obj, "dataset_id", None)
        with self._lock:
            self._objects[key] = obj
            records = self._records()
            records[key] = {"id": object_id, "uploaded_at": time.time(), "expires_at": expires_at}
            self._save(records)

    def reuse(self, kind: str, digest: str, fetch: Callable[[str], Any]) -> Any | None:
        """The live upload of content ``digest``, or None (never uploaded, expired, gone)."""
        key = f"{kind}:{digest}"
        with self._lock:
            record = self._records().get(key)
            expires = record.get("expires_at") if record else None
            if expires is not None and float(expires) - time.time() < REUSE_MARGIN_S:
                self._objects.pop(key, None)
                return None
            if key in self._objects:
                return self._objects[key]
        if not record or not record.get("id"):
            return None
        try:
            obj = fetch(str(record["id"]))
        except Exception:  # deleted on the service, another account's id, offline: upload anew
            return None
        with self._lock:
            self._objects[key] = obj
        return obj

    def model(self, path: Path, upload: Callable[[], Any], fetch: Callable[[str], Any]) -> Any:
        """The service's model for ``path``: reused when its content was uploaded before."""
        digest = file_hash(path)
        found = self.reuse("model", digest, fetch)
        if found is None:
            found = upload()
            self.remember("model", digest, found, None)
        return found

    def dataset(
        self,
        entries: Mapping[str, list[Any]],
        upload: Callable[[], Any],
        fetch: Callable[[str], Any],
    ) -> Any:
        """The service's dataset for ``entries``: reused while it has not (nearly) expired."""
        digest = dataset_hash(entries)
        found = self.reuse("dataset", digest, fetch)
        if found is None:
            found = upload()
            expiration = getattr(found, "expiration_time", None)
            expires_at = (
                expiration.timestamp()
                if expiration is not None
                else time.time() + DATASET_LIFETIME_S
            )
            self.remember("dataset", digest, found, expires_at)
        return found
