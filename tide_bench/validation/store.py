"""A fetched pack in the user's cache: ``<cache>/validation/<pack>/<revision>/``.

The folder holds the upstream files at their upstream paths and ``pack.json`` (what was
fetched, from where, each file's verified sha256, when the licence was accepted). It appears
only complete: :func:`tide_bench.validation.fetch.fetch_pack` builds it in a staging folder
and renames it into place. Readers re-check every file's sha256 against ``pack.json`` before
use, so a file changed in the cache is refused, not silently audited.

The cache is the user's, but a shared or restored one is written by others: a ``pack.json`` may
name only the manifest's own files, each a plain file (no link, no FIFO) inside the pack's
folder, and the folder itself must resolve inside the cache. Anything else is refused, naming
the file and the field, before a byte of it is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tide_bench.core.errors import DataError
from tide_bench.core.hashing import sha256_file
from tide_bench.core.jsonio import read_json
from tide_bench.core.paths import cache_dir
from tide_bench.validation.manifest import Pack, load_pack

PACK_RECORD = "pack.json"
RECORD_KIND = "tide-bench-validation-pack"
RECORD_MAX_BYTES = 1_000_000


def packs_root() -> Path:
    return cache_dir() / "validation"


def pack_root(pack: Pack) -> Path:
    """``<cache>/validation/<pack>/<revision>``; its resolved path must stay inside the cache (the
    manifest's fields are checked against strict patterns; a link in the cache is not followed out)."""
    root = packs_root() / pack.name / pack.revision
    base = packs_root().resolve()
    if not root.resolve().is_relative_to(base) or root.resolve() == base:
        raise DataError(
            f"the cache folder of pack {pack.name!r} at revision {pack.revision!r} resolves outside {base}",
            path=pack.source,
            field="source.revision",
            hint="a manifest field or a link in the cache points elsewhere: remove the link or fix the manifest",
        )
    return root


@dataclass(frozen=True)
class FetchedPack:
    pack: Pack
    root: Path
    record: dict[str, Any]

    def path(self, role: str, judge: str | None = None) -> Path | None:
        """The cached file of ``role`` (and published ``judge``), or None when it was not fetched."""
        f = self.pack.file(role, judge)
        if f is None or f.path in self.record.get("missing", []):
            return None
        return self.root / f.path

    def require(self, role: str, why: str) -> Path:
        path = self.path(role)
        if path is None:
            f = self.pack.file(role)
            raise DataError(
                f"{why} needs {f.path if f else role}, which this copy of {self.pack.name} does not hold",
                path=self.root,
                hint=f"fetch again from a copy that has it: tide-bench validation fetch {self.pack.name} --from PATH",
            )
        return path

    def provenance(self) -> dict[str, Any]:
        return {
            "pack": self.pack.name,
            "repo": self.pack.repo,
            "revision": self.pack.revision,
            "files": self.record.get("files", {}),
            "fetched_from": self.record.get("fetched_from"),
            "fetched_at": self.record.get("fetched_at"),
            "licence": self.pack.licence_id,
            "redistribution": self.pack.redistribution,
            "unpinned": self.record.get("unpinned", []),
        }


def load_fetched(name: str | Pack, *, verify: bool = True) -> FetchedPack:
    """The cached copy of a pack; a clear error when it was never fetched or has changed."""
    pack = name if isinstance(name, Pack) else load_pack(name)
    root = pack_root(pack)
    record_path = root / PACK_RECORD
    if not record_path.is_file():
        raise DataError(
            f"validation pack {pack.name!r} is not fetched (looked in {root})",
            hint=f"run: tide-bench validation fetch {pack.name} --accept-licence  (offline: add --from PATH)",
        )
    record = read_json(record_path, DataError, max_bytes=RECORD_MAX_BYTES, follow_symlinks=False)
    if not isinstance(record, dict) or record.get("kind") != RECORD_KIND or not isinstance(record.get("files"), dict):
        raise DataError("not a tide-bench validation pack record", path=record_path)
    _check_record(pack, root, record, record_path)
    if verify:
        for rel, digest in record["files"].items():
            path = root / rel
            if sha256_file(path) != digest:
                raise DataError(
                    "a cached pack file is missing or changed since it was fetched and checked",
                    path=path,
                    hint=f"fetch it again: tide-bench validation fetch {pack.name} --accept-licence --force",
                )
    return FetchedPack(pack, root, record)


def _check_record(pack: Pack, root: Path, record: dict[str, Any], record_path: Path) -> None:
    """What ``pack.json`` may say: the manifest's files only, each a sha256, each a plain file in
    the pack's folder (see the module docstring)."""
    known = {f.path for f in pack.files}
    missing = record.get("missing", [])
    if not isinstance(missing, list) or not all(isinstance(m, str) and m in known for m in missing):
        raise DataError("'missing' must list files of the pack's manifest", path=record_path, field="missing")
    for rel, digest in record["files"].items():
        if rel not in known:
            raise DataError(f"{rel!r} is not a file of the pack's manifest", path=record_path, field="files")
        if not (isinstance(digest, str) and len(digest) == 64 and all(c in "0123456789abcdef" for c in digest)):
            raise DataError(f"the sha256 of {rel!r} is not 64 hex digits", path=record_path, field=f"files.{rel}")
        path = root / rel
        if path.is_symlink() or not path.is_file() or not path.resolve().is_relative_to(root.resolve()):
            raise DataError(
                "a cached pack file is missing, a link, or not a plain file",
                path=path,
                hint=f"fetch it again: tide-bench validation fetch {pack.name} --accept-licence --force",
            )
