"""Reusing unchanged entries between board builds (``leaderboard build --reuse DIR``).

Why: a board is rebuilt whenever one submission is added or changed, and almost all of a
build's work is preparing entries (read, check, score, tabulate, write per-item files: about a
quarter of a second each), most of them exactly as in the build before. An entry's preparation
is a pure function of its folder's bytes and of what the build prepares it with, so it is kept
under a content key and reused, as HELM's summarizer reads each run's stats instead of
recomputing them. What the entries decide together (the checks of the entries against each
other, the ranking, the bias diagnostics, the charts and every page) is computed afresh in every
build, reused entries or not.

The key of an entry (:meth:`ReuseStore.key_for`) is the sha256 of
- the folder's resolved path and every file in it: relative path, size and sha256 of its bytes
  (any link or special file, or a folder over the board's limits, is never reused: validation
  gives its reason afresh);
- the board as the build applies it (with the item pins its data implies, so changed data
  changes it), the rubric's content hash, the risk labels' sha256, the build's options;
- tide-bench's code and data files (every file of the installed package) and the versions of the
  libraries the numbers pass through (numpy, scipy, orjson, PyYAML, jsonschema), and Python's.

A change to any of these prepares the entry anew. The store keeps what the last build used and
removes the rest (:meth:`ReuseStore.prune`), so it never grows past one board's entries.

The store holds Python pickles, which can run code when read: it must be a folder only its
owner can write (``ConfigError`` otherwise, before anything is read). Each stored entry carries
the sha256 of its pickle, so a damaged copy (a flipped byte, a cut file from a cache restore) is
never unpickled into other numbers; an entry that cannot be read back whole is prepared anew
and rewritten, never trusted in part.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import pickle
import re
import shutil
import stat
import sys
import time
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

from tide_bench.core.errors import ConfigError
from tide_bench.leaderboard.config import BoardConfig
from tide_bench.leaderboard.site.entry_files import DOWNLOADS
from tide_bench.leaderboard.site.instances import FOLDER, PENDING_ITEMS
from tide_bench.leaderboard.submission.data_pins import effective_board

MARKER = ".tide-bench-reuse"
_KEY = re.compile(r"[0-9a-f]{64}")
FORMAT = 1  # the layout of a stored entry; a new one never reads an old one
ENTRY = "entry.pickle"
FILES = "files"
ITEMS = "items"
PARTIAL = ".partial-"
STALE_PARTIAL_S = 3600  # a partial entry older than this is a killed build's, removed by prune
LIBRARIES = ("numpy", "scipy", "orjson", "PyYAML", "jsonschema")


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """The sha256 of every file of the installed ``tide_bench`` package (code, rubrics, schemas,
    shipped data) and of the versions of the libraries and Python the numbers pass through.
    Computed once per process, before the build's workers fork."""
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix not in (".pyc", ".pyo"):
            digest.update(path.relative_to(package).as_posix().encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    for name in LIBRARIES:
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            version = "absent"
        digest.update(f"{name}=={version}\0".encode())
    digest.update(sys.version.encode())
    return digest.hexdigest()


def job_key(board: BoardConfig, options: dict[str, Any]) -> str:
    """What every entry of a build is prepared with, as one hash (the module docstring): the board
    as the build applies it and the build's ``options`` (rubric hash, risk labels, flags)."""
    described = {
        "format": FORMAT,
        "code": code_fingerprint(),
        "board": dataclasses.asdict(effective_board(board)),
        "options": options,
    }
    return hashlib.sha256(json.dumps(described, sort_keys=True, default=repr).encode()).hexdigest()


def _private(path: Path, *, folder: bool = True) -> None:
    """Refuse a store folder (or, ``folder=False``, a stored file) that is a link or of another
    kind, someone else's, or writable by others: it holds pickles, which run code when read."""
    info = path.lstat()
    kind = stat.S_ISDIR(info.st_mode) if folder else stat.S_ISREG(info.st_mode)
    what = "the reuse store" if folder else "a stored entry"
    if stat.S_ISLNK(info.st_mode) or not kind:
        raise ConfigError(f"{what} must be a {'folder' if folder else 'file'}, not a link or anything else", path=path)
    if hasattr(os, "getuid") and info.st_uid != os.getuid():
        raise ConfigError(
            f"{what} belongs to another user: it holds pickles, which run code when read",
            path=path,
            hint="use a folder of your own (e.g. ~/.cache/tide-bench/board-reuse)",
        )
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise ConfigError(
            f"{what} is writable by other users: it holds pickles, which run code when read",
            path=path,
            hint=f"chmod go-w {path}",
        )


def _folder_files(folder: Path, max_files: int, max_bytes: int) -> list[tuple[str, Path, int]] | None:
    """``(relative path, path, size)`` of every regular file under ``folder``, sorted; None when
    anything else is there or it is over the limits (such a folder is never reused)."""
    out: list[tuple[str, Path, int]] = []
    total = 0
    for dirpath, dirnames, filenames in os.walk(folder, followlinks=False):
        base = Path(dirpath)
        for name in dirnames:
            if (base / name).is_symlink():
                return None
        for name in filenames:
            path = base / name
            info = path.lstat()
            if not stat.S_ISREG(info.st_mode):
                return None
            total += info.st_size
            out.append((path.relative_to(folder).as_posix(), path, info.st_size))
            if len(out) > max_files or total > max_bytes:
                return None
    return sorted(out)


@dataclass(frozen=True)
class ReuseStore:
    """One board's stored entries: ``root`` is ``<store folder>/<job key>``."""

    root: Path
    job: str
    max_files: int
    max_bytes: int

    def key_for(self, folder: Path) -> str | None:
        """The entry's content key (the module docstring), or None when it must not be reused."""
        try:
            files = _folder_files(folder, self.max_files, self.max_bytes)
            if files is None:
                return None
            digest = hashlib.sha256(f"{self.job}\0{folder.resolve()}\0".encode())
            for relative, path, size in files:
                with path.open("rb") as handle:
                    content = hashlib.file_digest(handle, "sha256").hexdigest()
                digest.update(f"{relative}\0{size}\0{content}\0".encode())
            return digest.hexdigest()
        except OSError:
            return None  # unreadable: validation says why

    def load(self, key: str, site: Path | None) -> Any | None:
        """The object stored under ``key``, its site files copied into ``site``; None (and the
        stored entry removed) when there is none or it cannot be read back whole."""
        entry = self.root / key
        if not (entry / ENTRY).is_file():
            return None
        files: list[str] = []
        try:
            _private(entry / ENTRY, folder=False)
            raw = (entry / ENTRY).read_bytes()
            if hashlib.sha256(raw[32:]).digest() != raw[:32]:
                raise ValueError("damaged: its checksum does not match")  # a flipped byte, a cut copy
            stored, files, split = pickle.loads(raw[32:])  # a private folder, checked above
            if site is not None:
                self._restore_files(entry, files, split, site)
        except Exception:  # a damaged entry is prepared anew, never half-used
            shutil.rmtree(entry, ignore_errors=True)
            if site is not None:
                for relative in _site_relative(files):
                    (site / relative).unlink(missing_ok=True)  # what was copied before it failed
            return None
        return stored

    def _restore_files(self, entry: Path, files: list[str], split: str, site: Path) -> None:
        if _site_relative(files) != files:
            raise ValueError("a stored file path outside the site's per-item folders")
        for relative in files:
            target = site / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(entry / FILES / relative, target)
        if split:
            candidate = site / FOLDER / f"{PENDING_ITEMS}{split}.js"
            if not candidate.exists():
                _copy_atomically(self.root / ITEMS / f"{split}.js", candidate)

    def save(self, key: str, stored: Any, site: Path | None, files: list[str], split: str) -> None:
        """Keep ``stored`` under ``key`` with its site-relative ``files`` from ``site`` and the
        conversations of its item set (``split``, a split hash; "" for none). A store that
        cannot be written only costs the next build the work."""
        entry = self.root / key
        if entry.exists():
            return
        partial = self.root / f"{PARTIAL}{key}.{os.getpid()}"
        try:
            partial.mkdir(mode=0o700)
            if site is None:
                files, split = [], ""
            else:
                for relative in files:
                    (partial / FILES / relative).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(site / relative, partial / FILES / relative)
                kept = self.root / ITEMS / f"{split}.js"
                if split and not kept.exists():
                    kept.parent.mkdir(mode=0o700, exist_ok=True)
                    _copy_atomically(site / FOLDER / f"{PENDING_ITEMS}{split}.js", kept)
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
            pickled = pickle.dumps((stored, files, split), pickle.HIGHEST_PROTOCOL)
            with os.fdopen(os.open(partial / ENTRY, flags, 0o600), "wb") as handle:
                handle.write(hashlib.sha256(pickled).digest() + pickled)  # a damaged copy is never unpickled
            partial.replace(entry)
        except OSError:
            pass
        finally:
            shutil.rmtree(partial, ignore_errors=True)

    def prune(self, used: set[str], split_hashes: set[str]) -> None:
        """Remove the stored entries this build did not use, the item sets none of them needs,
        and killed builds' partial entries."""
        now = time.time()
        for path in self.root.iterdir():
            name = path.name
            if name == ITEMS:
                for items in path.iterdir():
                    if items.name.removesuffix(".js") not in split_hashes:
                        items.unlink(missing_ok=True)
            elif name.startswith(PARTIAL):
                if now - path.lstat().st_mtime > STALE_PARTIAL_S:
                    shutil.rmtree(path, ignore_errors=True)
            elif name not in used:
                shutil.rmtree(path, ignore_errors=True) if path.is_dir() else path.unlink(missing_ok=True)


def _site_relative(files: object) -> list[str]:
    """The paths of ``files`` that name a per-item file of a site (``instances/`` or
    ``downloads/``, no ``..``, not absolute): nothing else is ever written or removed."""
    if not isinstance(files, list):
        return []
    return [
        f
        for f in files
        if isinstance(f, str)
        and f.split("/", 1)[0] in (FOLDER, DOWNLOADS)
        and ".." not in f.split("/")
        and not Path(f).is_absolute()
    ]


def _copy_atomically(source: Path, target: Path) -> None:
    partial = target.with_name(f"{target.name}{PARTIAL}{os.getpid()}")
    shutil.copyfile(source, partial)
    partial.replace(target)


def open_store(folder: str | Path, board: BoardConfig, options: dict[str, Any]) -> ReuseStore:
    """The store for ``job``'s board in ``folder``: a new or empty folder (made private), or one
    a build made before (it carries a ``.tide-bench-reuse`` marker); anything else is refused,
    so that a mistyped path never has its contents removed. The folder and its board sub-folder
    must be this user's and writable by no one else. The stores of other boards, rubrics or
    code are removed (they would never be read again)."""
    base = Path(folder).expanduser()
    base.mkdir(mode=0o700, parents=True, exist_ok=True)
    _private(base)
    marker = base / MARKER
    if not marker.is_file():
        if any(base.iterdir()):
            raise ConfigError(
                f"the reuse store must be a new or empty folder, or one a build made (it holds {MARKER})",
                path=base,
                hint="name a folder for tide-bench alone, e.g. ~/.cache/tide-bench/board-reuse",
            )
        marker.write_text("tide-bench leaderboard build --reuse: entries kept between builds\n", "utf-8")
    key = job_key(board, options)
    root = base / key
    root.mkdir(mode=0o700, exist_ok=True)
    _private(root)
    for child in base.iterdir():
        if child.name != key and _KEY.fullmatch(child.name) and child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
    return ReuseStore(root, key, board.max_files, board.max_bytes)


def refuse_overlap(store: Path, submissions: Path) -> None:
    """The store may neither lie inside the submissions folder (it would be read as an entry)
    nor hold it (pruning would remove submissions)."""
    a, b = store.expanduser().resolve(), submissions.expanduser().resolve()
    if a == b or b in a.parents or a in b.parents:
        where = "is" if a == b else ("lies inside" if b in a.parents else "holds")
        raise ConfigError(
            f"the reuse store {where} the submissions folder ({submissions})",
            path=store,
            hint="keep the store apart, e.g. --reuse ~/.cache/tide-bench/board-reuse",
        )
