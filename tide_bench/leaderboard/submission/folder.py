"""The first look at a submission folder, before any file in it is opened.

The folder is walked with ``lstat`` only (links are never followed). The walk stops at the
first symbolic link, device, pipe or socket, at the first file over the size limit, when
the folder grows past the size or file-count limit: such a submission is refused without a
byte of it being read, so a ``submission.yaml`` linked to a credentials file or a
``run.json`` linked to ``/dev/zero`` can neither leak nor exhaust memory.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from tide_bench.core.errors import TideBenchError


class FolderRefused(TideBenchError):
    """The folder itself is unsafe to read (a link, a device, over a limit)."""


@dataclass
class FolderListing:
    """The regular files of a submission folder (paths relative to it, ``/``-separated)."""

    root: Path
    files: dict[str, int] = field(default_factory=dict)  # relative path -> size in bytes

    @property
    def total_bytes(self) -> int:
        return sum(self.files.values())

    def has(self, rel: str) -> bool:
        return rel in self.files


def scan_folder(root: Path, *, max_bytes: int, max_files: int) -> FolderListing:
    """List ``root``'s regular files, refusing the folder at the first unsafe entry."""
    if root.is_symlink():
        raise FolderRefused("the submission folder is a symbolic link: submit a plain folder")
    if not root.is_dir():
        raise FolderRefused(f"{root.name} is not a folder")
    listing = FolderListing(root)
    pending = [root]
    while pending:
        folder = pending.pop()
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError as exc:
            raise FolderRefused(f"cannot list {folder.relative_to(root) or '.'} ({exc.strerror})") from None
        for entry in entries:
            rel = Path(entry.path).relative_to(root).as_posix()
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISLNK(info.st_mode):
                raise FolderRefused(f"{rel} is a symbolic link: submit regular files only (nothing was read)")
            if stat.S_ISDIR(info.st_mode):
                pending.append(Path(entry.path))
                continue
            if not stat.S_ISREG(info.st_mode):
                raise FolderRefused(f"{rel} is a device, pipe or socket, not a regular file (nothing was read)")
            listing.files[rel] = info.st_size
            if len(listing.files) > max_files:
                raise FolderRefused(f"more than {max_files} files: remove what `tide-bench submit` did not put there")
            if listing.total_bytes > max_bytes:
                raise FolderRefused(
                    f"over the {max_bytes / 1e6:g} MB size limit (at {rel}): remove extra files (nothing was read)"
                )
    return listing
