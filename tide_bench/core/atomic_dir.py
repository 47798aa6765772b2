"""Put a freshly built folder in place of an old one without a moment where neither exists.

On Linux, ``renameat2(RENAME_EXCHANGE)`` swaps the two names in one system call, so a web
server or a reader sees either the old folder or the new one, never a missing or half
folder. Where that call is unavailable (other systems, some file systems), two renames are
used and the old folder is put back if the second fails. Either way the old folder is then
removed, and only it: the caller vouches that it owns what it replaces.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from tide_bench.core.jsonio import default_dir_mode

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two existing paths; False when the system cannot."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    return bool(renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0)


def make_public(folder: Path) -> None:
    """Give ``folder`` and its subfolders the usual folder mode (``mkdtemp`` makes them 0700)."""
    mode = default_dir_mode()
    for path in [folder, *(p for p in folder.rglob("*") if p.is_dir() and not p.is_symlink())]:
        path.chmod(mode)


def _remove(path: Path) -> None:
    if path.is_symlink() or not path.is_dir():
        path.unlink()
    else:
        shutil.rmtree(path)


def replace_folder(staging: Path, target: Path) -> None:
    """Move ``staging`` to ``target``, replacing (and then deleting) a previous ``target``."""
    if not (target.exists() or target.is_symlink()):
        staging.rename(target)
        return
    if _exchange(staging, target):
        _remove(staging)  # now holds the previous target
        return
    retired = staging.with_name(staging.name + ".old")
    target.rename(retired)
    try:
        staging.rename(target)
    except BaseException:
        with contextlib.suppress(OSError):
            retired.rename(target)
        raise
    _remove(retired)


@contextlib.contextmanager
def staged_folder(target: Path, prefix: str | None = None) -> Iterator[Path]:
    """A fresh folder beside ``target`` to build the new one in. When the block ends without an
    error it is given the usual folder modes and put in place of ``target`` (:func:`replace_folder`);
    on any error (Ctrl-C included) it is removed and ``target`` is left as it was."""
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=prefix or f".{target.name}.", dir=target.parent))
    try:
        yield staging
        make_public(staging)
        replace_folder(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
