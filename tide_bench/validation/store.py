"""A fetched pack in the user's cache: ``<cache>/validation/<pack>/<revision>/``.

The folder holds the upstream files at their upstream paths and ``pack.json`` (what was
fetched, from where, each file's verified sha256, when the licence was accepted). It appears
only complete: :func:`tide_bench.validation.fetch.fetch_pack` builds it in a staging folder
and renames it into place. Readers re-check every file's sha256 against ``pack.json`` before
use, so a file changed in the cache is refused, not silently audited.
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


def packs_root() -> Path:
    return cache_dir() / "validation"


def pack_root(pack: Pack) -> Path:
    return packs_root() / pack.name / pack.revision


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
    record = read_json(record_path, DataError)
    if not isinstance(record, dict) or record.get("kind") != RECORD_KIND or not isinstance(record.get("files"), dict):
        raise DataError("not a tide-bench validation pack record", path=record_path)
    if verify:
        for rel, digest in record["files"].items():
            path = root / rel
            if not path.is_file() or sha256_file(path) != digest:
                raise DataError(
                    "a cached pack file is missing or changed since it was fetched and checked",
                    path=path,
                    hint=f"fetch it again: tide-bench validation fetch {pack.name} --accept-licence --force",
                )
    return FetchedPack(pack, root, record)
