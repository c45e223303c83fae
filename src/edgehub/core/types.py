"""Re-export of `edgehub.paths` under the core namespace."""

from edgehub.paths import LocalPath, RemotePath, is_remote

__all__ = ["LocalPath", "RemotePath", "is_remote"]
