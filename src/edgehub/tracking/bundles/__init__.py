"""Run bundles: runs with their stored artifacts and image locks in one tar file, to move
between stores (`hub runs export` / `hub runs import`).

A bundle holds ``edgehub-bundle.json`` (format, version, and the sha256 and size of every other
member), ``runs/<run id>.json`` (the run's rows of every table, paths relative to the store),
``artifacts/<sha256>/<file name>`` (each stored artifact once, by content) and
``images/<image tag>/{Dockerfile,requirements.lock}`` (what built the image a run used, where
known). It is a plain tar, gzip-compressed when its name ends in ``.gz`` or ``.tgz``, or
zstd-compressed for ``.zst`` where the optional ``zstandard`` module is installed (a zstd bundle
is decompressed to an unlinked file first, no larger than its limits allow, then read as a tar).

Reading a bundle trusts nothing in it, as nothing a device sends is trusted: only regular files
under those names are accepted (no links, devices, FIFOs, sparse files, absolute names or
``..``), within count, size and header limits; the manifest (written first) is checked before
any file is written, each file against its declared size and hash as it streams into the
store's unfinished-copy folder, every artifact against its hash, every image lock against its
tag, and every run field by field (`validate`) and against what the store already holds, before
anything reaches the store. Then artifacts go in first and all the rows in one transaction, so
a refused bundle leaves the store as it was. Each run an import adds is tagged
``imported_from``: the compile cache never serves it and ``--from-run`` refuses it.
"""

from edgehub.tracking.bundles.format import (
    IMPORTED_TAG,
    BundleContents,
    BundleLimits,
    ImageLock,
    ImportResult,
    insert_runs,
    run_rows,
    same_rows,
    unmarked,
)
from edgehub.tracking.bundles.read import StagedBundle, read_bundle
from edgehub.tracking.bundles.write import write_bundle

__all__ = [
    "IMPORTED_TAG",
    "BundleContents",
    "BundleLimits",
    "ImageLock",
    "ImportResult",
    "StagedBundle",
    "insert_runs",
    "read_bundle",
    "run_rows",
    "same_rows",
    "unmarked",
    "write_bundle",
]
