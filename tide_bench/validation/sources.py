"""Where a pack's upstream files come from: the network, or a local copy for offline machines.

A local copy (``validation fetch PACK --from PATH``) may be

* a git clone (a working tree with ``.git``, or a bare repository): files are read from the
  git objects *at the pinned revision*, never from whatever the working tree has checked out;
* an archive (``.zip``, ``.tar``, ``.tar.gz``/``.tgz``), such as a repository download, whose
  files may sit under one top-level folder (``AnnoMI-<revision>/``);
* a plain folder holding the files at their upstream paths (or under one top-level folder).

Members are read by the manifest's own paths, never extracted by the archive's names, so an
archive cannot write outside the cache. Every file read here is checked by the caller
against the manifest's hash. A copy or download stops at the pinned size plus one byte and is
refused at once (a 1 MB zip declaring a 1 GB member never fills the disk); a file without a
pinned size stops at :data:`UNSIZED_LIMIT`.
"""

from __future__ import annotations

import shutil
import subprocess
import tarfile
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from tide_bench.core.errors import DataError

CHUNK = 1 << 20
TIMEOUT_S = 60
MAX_MEMBERS = 200_000  # a repository archive holds thousands of files at most
UNSIZED_LIMIT = 1 << 30  # a pack file the manifest gives no size for: 1 GiB at most
ProgressFn = Callable[[str, int, int | None], None]


class LocalCopy:
    """A local copy of an upstream repository; :meth:`open` returns ``None`` for a missing file."""

    kind = "folder"

    def __init__(self, root: Path) -> None:
        self.root = root

    def describe(self) -> str:
        return f"{self.kind} {self.root}"

    @contextmanager
    def open(self, rel: str) -> Iterator[IO[bytes] | None]:
        path = self._find(rel)
        if path is None:
            yield None
            return
        with path.open("rb") as handle:
            yield handle

    def _find(self, rel: str) -> Path | None:
        for base in (self.root, *self._single_child()):
            candidate = base / rel
            if candidate.is_file() and not candidate.is_symlink():
                return candidate
        return None

    def _single_child(self) -> list[Path]:
        children = [p for p in self.root.iterdir() if p.is_dir() and not p.name.startswith(".")]
        return children if len(children) == 1 else []


class GitCopy(LocalCopy):
    kind = "git repository"

    def __init__(self, root: Path, git_dir: Path, revision: str) -> None:
        super().__init__(root)
        self.git_dir = git_dir
        self.revision = revision
        if shutil.which("git") is None:
            raise DataError(
                "reading a git clone needs the git command", path=root, hint="install git, or pass a folder"
            )
        probe = self._git("cat-file", "-e", f"{revision}^{{commit}}")
        if probe.returncode != 0:
            raise DataError(
                f"the clone does not hold the pinned revision {revision}",
                path=root,
                hint=f"run `git -C {root} fetch origin {revision}`, or pass a folder or archive of that revision",
            )

    def _git(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(["git", f"--git-dir={self.git_dir}", *args], capture_output=True, check=False)

    @contextmanager
    def open(self, rel: str) -> Iterator[IO[bytes] | None]:
        proc = subprocess.Popen(
            ["git", f"--git-dir={self.git_dir}", "cat-file", "blob", f"{self.revision}:{rel}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert proc.stdout is not None
        first = proc.stdout.read(1)
        if not first:  # no such path at the revision, or a blob the clone lacks (a partial clone)
            proc.stdout.close()
            proc.wait()
            yield None
            return
        try:
            yield _Prefixed(first, proc.stdout)
        finally:
            proc.stdout.close()
            proc.wait()


class _Prefixed:
    """A binary stream with its first byte already read back in front."""

    def __init__(self, first: bytes, rest: IO[bytes]) -> None:
        self.first, self.rest = first, rest

    def read(self, n: int = -1) -> bytes:
        head, self.first = self.first, b""
        if n == -1:
            return head + self.rest.read()
        return head + self.rest.read(max(0, n - len(head)))


class ArchiveCopy(LocalCopy):
    kind = "archive"

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        try:
            if zipfile.is_zipfile(root):
                self._zip: zipfile.ZipFile | None = zipfile.ZipFile(root)
                self._tar: tarfile.TarFile | None = None
                names = [i.filename for i in self._zip.infolist() if not i.is_dir()]
            else:
                self._zip, self._tar = None, tarfile.open(root)  # noqa: SIM115 - closed by close()
                names = []
                for count, member in enumerate(self._tar, start=1):  # streamed, and bounded: a header bomb stops
                    if count > MAX_MEMBERS:
                        raise DataError(f"holds more than {MAX_MEMBERS:,} members: not a repository archive", path=root)
                    if member.isfile():
                        names.append(member.name)
        except (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError) as exc:
            raise DataError(f"not a readable zip or tar archive ({exc})", path=root) from None
        self._names = set(names)
        tops = {n.split("/", 1)[0] for n in names if "/" in n}
        self._prefixes = ["", *(f"{t}/" for t in tops)] if len(tops) == 1 else [""]

    def close(self) -> None:
        for handle in (self._zip, self._tar):
            if handle is not None:
                handle.close()

    @contextmanager
    def open(self, rel: str) -> Iterator[IO[bytes] | None]:
        name = next((p + rel for p in self._prefixes if p + rel in self._names), None)
        if name is None:
            yield None
            return
        if self._zip is not None:
            with self._zip.open(name) as handle:
                yield handle
            return
        assert self._tar is not None
        member = self._tar.extractfile(name)
        if member is None:
            yield None
            return
        with member:
            yield member


def local_copy(path: str | Path, revision: str) -> LocalCopy:
    """Open a clone, an archive or a folder (see the module docstring)."""
    root = Path(path).expanduser()
    if not root.exists():
        raise DataError("no such file or folder", path=root)
    if root.is_file():
        return ArchiveCopy(root)
    if (root / ".git").exists():
        return GitCopy(root, root / ".git", revision)
    if (root / "HEAD").is_file() and (root / "objects").is_dir():
        return GitCopy(root, root, revision)
    return LocalCopy(root)


def _limit(expected_size: int | None) -> int:
    return UNSIZED_LIMIT if expected_size is None else expected_size


def _too_long(label: str, expected_size: int | None) -> DataError:
    if expected_size is None:
        return DataError(
            f"too long: more than {UNSIZED_LIMIT} bytes, the most read for a file without a pinned size", field=label
        )
    return DataError(f"too long: more than {expected_size} bytes, the pinned file has {expected_size}", field=label)


def download(url: str, dest: Path, label: str, expected_size: int | None, progress: ProgressFn | None) -> None:
    """Stream ``url`` to ``dest``; a short body (fewer bytes than announced) is an error, and so
    is one longer than the pinned size (refused as soon as it passes it)."""
    try:
        response = urllib.request.urlopen(url, timeout=TIMEOUT_S)  # the pack's URL, or --base-url
    except urllib.error.HTTPError as exc:
        raise DataError(f"download failed: HTTP {exc.code} for {url}", field=label) from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DataError(
            f"download failed: {reason} ({url})",
            field=label,
            hint="on an offline machine, fetch with --from PATH (a clone, archive or folder of the upstream files)",
        ) from None
    announced = response.headers.get("Content-Length")
    if announced and announced.isdigit() and int(announced) > _limit(expected_size):
        response.close()
        raise _too_long(label, expected_size)
    total = int(announced) if announced and announced.isdigit() else expected_size
    with response:
        try:
            received = copy_stream(response, dest, label, expected_size, progress, total=total)
        except (OSError, ValueError) as exc:  # the connection dropped mid-body
            raise DataError(f"download interrupted ({exc})", field=label) from None
    if announced and announced.isdigit() and received != int(announced):
        raise DataError(f"truncated download: {received} of {announced} bytes", field=label)


def copy_stream(
    source: IO[bytes] | Any,
    dest: Path,
    label: str,
    expected_size: int | None,
    progress: ProgressFn | None,
    *,
    total: int | None = None,
) -> int:
    """Copy ``source`` to ``dest`` and return the bytes copied; past the pinned size (plus one
    byte read to know) it stops and refuses at once."""
    limit, done = _limit(expected_size), 0
    with dest.open("wb") as out:
        while chunk := source.read(min(CHUNK, limit + 1 - done)):
            done += len(chunk)
            if done > limit:
                raise _too_long(label, expected_size)
            out.write(chunk)
            if progress:
                progress(label, done, total if total is not None else expected_size)
    return done
