"""``tide-bench validation fetch PACK``: download (or copy) a pack at its pinned revision.

Nothing is written before the licence is accepted. Each file is streamed into a staging
folder beside the cache entry and checked against the manifest: its size where known, its
sha256, else the git blob id that the pinned upstream tree records (``sha1("blob <size>\\0" +
content)``, as strict a check as a sha256 for a file the project could not inspect). A file
without any pin (a pack whose upstream lies where the project could not look) is refused
unless ``allow_unpinned``; its sha256 is then recorded and the pack is marked unpinned
everywhere it is reported. Only when every required file has passed is the staging folder
renamed into place, so a wrong hash, a truncated download or an interrupted fetch leaves the
previous copy (or nothing), never a half-written pack.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tide_bench import __version__
from tide_bench.core.atomic_dir import staged_folder
from tide_bench.core.errors import ConfigError, DataError
from tide_bench.core.jsonio import write_json
from tide_bench.core.provenance import utc_now
from tide_bench.validation.manifest import Pack, PackFile, load_pack
from tide_bench.validation.sources import ArchiveCopy, LocalCopy, ProgressFn, copy_stream, download, local_copy
from tide_bench.validation.store import PACK_RECORD, RECORD_KIND, FetchedPack, load_fetched, pack_root

BASE_URL_ENV = "TIDE_BENCH_VALIDATION_BASE_URL"


def licence_notice(pack: Pack) -> str:
    """What the user accepts with ``--accept-licence`` (printed before anything is fetched)."""
    where = {"none": "nothing of it leaves your cache", "ratings": "only scores and ids may leave your cache"}
    return (
        f"{pack.title}: licence {pack.licence_id}.\n{pack.licence_summary}\n"
        f"Redistribution: {pack.redistribution} ({where.get(pack.redistribution, 'all of it may be shared')}).\n"
        f"Source: {pack.repo} at {pack.revision}. Cite: {pack.citation}"
    )


def _digests(path: Path) -> tuple[str, str, int]:
    """(sha256, git blob id, size) of a file, in one read."""
    size = path.stat().st_size
    sha, blob = hashlib.sha256(), hashlib.sha1(f"blob {size}\0".encode(), usedforsecurity=False)
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            sha.update(chunk)
            blob.update(chunk)
    return sha.hexdigest(), blob.hexdigest(), size


def _check(f: PackFile, path: Path, allow_unpinned: bool) -> str:
    sha, blob, size = _digests(path)
    if f.size is not None and size != f.size:
        what = "truncated" if size < f.size else "too long"
        raise DataError(f"{what}: {size} bytes, the pinned file has {f.size}", field=f.path)
    if f.sha256 and sha != f.sha256:
        raise DataError(f"sha256 mismatch: got {sha}, the manifest pins {f.sha256}", field=f.path)
    if not f.sha256 and f.git_blob and blob != f.git_blob:
        raise DataError(f"git blob id mismatch: got {blob}, the pinned tree has {f.git_blob}", field=f.path)
    if not f.pinned and not allow_unpinned:
        raise ConfigError(
            f"{f.path} has no pinned hash in the manifest: the project could not check what upstream serves",
            hint="pass --allow-unpinned to accept it; its sha256 is recorded and reports mark the pack unpinned",
        )
    return sha


def _get(
    f: PackFile,
    dest: Path,
    pack: Pack,
    copy: LocalCopy | None,
    base_url: str | None,
    progress: ProgressFn | None,
) -> bool:
    """Write one file to ``dest``; False when a local copy does not hold it."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    if copy is None:
        download(pack.url(f.path, base_url), dest, f.path, f.size, progress)
        return True
    with copy.open(f.path) as handle:
        if handle is None:
            return False
        copy_stream(handle, dest, f.path, f.size, progress)
    return True


def fetch_pack(
    name: str,
    *,
    accept_licence: bool = False,
    source: str | Path | None = None,
    base_url: str | None = None,
    allow_unpinned: bool = False,
    force: bool = False,
    progress: ProgressFn | None = None,
    notice: Callable[[str], None] | None = None,
) -> FetchedPack:
    """Fetch pack ``name`` into the cache and return it (see the module docstring)."""
    pack = load_pack(name)
    if notice:
        notice(licence_notice(pack))
    if not accept_licence:
        raise ConfigError(
            f"fetching {pack.name} needs you to accept its licence ({pack.licence_id})",
            hint=f"read the terms above, then run: tide-bench validation fetch {pack.name} --accept-licence",
        )
    target = pack_root(pack)
    if (target / PACK_RECORD).is_file() and not force:
        with contextlib.suppress(DataError):
            return load_fetched(pack)
    if not pack.pinned_revision and not allow_unpinned:
        raise ConfigError(
            f"{pack.name} is not pinned to a revision ({pack.revision!r}): upstream may change under you",
            hint="pass --allow-unpinned to fetch it anyway (reports mark it unpinned)",
        )
    copy = local_copy(source, pack.revision) if source is not None else None
    base_url = base_url or os.environ.get(BASE_URL_ENV) or None
    try:
        with staged_folder(target, prefix=".staging-") as staging:
            record = _fill(pack, staging, copy, base_url, allow_unpinned, progress)
            record["fetched_from"] = f"{copy.describe()}" if copy else pack.url("", base_url).rstrip("/")
            write_json(staging / PACK_RECORD, record)
    finally:
        if isinstance(copy, ArchiveCopy):
            copy.close()
    return load_fetched(pack)


def _fill(
    pack: Pack,
    staging: Path,
    copy: LocalCopy | None,
    base_url: str | None,
    allow_unpinned: bool,
    progress: ProgressFn | None,
) -> dict[str, Any]:
    files: dict[str, str] = {}
    missing: list[str] = []
    unpinned: list[str] = []
    for f in pack.files:
        dest = staging / f.path
        try:
            found = _get(f, dest, pack, copy, base_url, progress)
        except DataError:
            if f.required:
                raise
            found = False  # an optional file that could not be had: recorded as missing, the rest still usable
            dest.unlink(missing_ok=True)
        if not found:
            if f.required:
                raise DataError(
                    f"{f.path} is not in this copy: it does not look like {pack.repo} at {pack.revision}",
                    path=copy.root if copy else None,
                    hint="pass the repository's top folder (a clone, its archive, or a folder with the files at their "
                    f"upstream paths); needed: {', '.join(x.path for x in pack.files if x.required)}",
                )
            missing.append(f.path)
            continue
        files[f.path] = _check(f, dest, allow_unpinned)
        if not f.pinned:
            unpinned.append(f.path)
    return {
        "kind": RECORD_KIND,
        "pack": pack.name,
        "repo": pack.repo,
        "revision": pack.revision,
        "files": files,
        "missing": missing,
        "unpinned": unpinned + ([] if pack.pinned_revision else [f"revision {pack.revision}"]),
        "licence": pack.licence_id,
        "licence_accepted_at": utc_now(),
        "fetched_at": utc_now(),
        "tide_bench": __version__,
    }
