"""Per-cell claims with heartbeats: several workers, on one machine or many, share one study folder.

A worker that takes a cell creates ``<out>/.study/claims/<cell>.json`` atomically (written to a
temporary file, then hard-linked into place: the link fails if the name exists, on local disks
and NFS alike) and rewrites it every ``heartbeat_s`` seconds. A claim is **stale**, and its cell
free to take, when its heartbeat is older than ``stale_after_s``, when its process is gone
(same host), or when it belongs to the same Slurm job as the taker (a requeued job, whose
previous run is dead by Slurm's guarantee).

Breaking a stale claim is race-free between several takers: the breaker hard-links the stale
file to a name made of its token and heartbeat count (only the first breaker of that exact
state succeeds), checks the link still holds that state, and only then removes the claim;
every taker then competes for the fresh one, which exactly one creates.

A claim file is written with fsync before it is linked or renamed into place, so a node crash
leaves the old claim or the new one, not an empty file. A claim that cannot be read all the same
(empty, cut, not an object: a crash on a file system that lost it, a stray edit) counts as live
while the file is younger than ``stale_after_s`` (by its modification time) and is broken after,
with a message naming the file: a damaged claim never blocks its cell for ever.

Never two writers: a holder checks, at every heartbeat and before each stage record, that
the claim is still its own; a holder that was frozen past ``stale_after_s`` and finds its
claim taken stops at once (``on_lost``) and records nothing. Clocks of the nodes must agree
to well within ``stale_after_s`` (NTP, as on every cluster); the default is five minutes.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CLAIMS_DIR = Path(".study") / "claims"
HEARTBEAT_S = 30.0
STALE_AFTER_S = 300.0


class ClaimLost(RuntimeError):
    """This worker's claim was broken by another worker (it had stopped beating)."""


def job_identity() -> str | None:
    """The scheduler's id of this job (a requeued Slurm job keeps it), if any."""
    env = os.environ
    if env.get("SLURM_ARRAY_JOB_ID") and env.get("SLURM_ARRAY_TASK_ID"):
        return f"slurm:{env['SLURM_ARRAY_JOB_ID']}_{env['SLURM_ARRAY_TASK_ID']}"
    if env.get("SLURM_JOB_ID"):
        return f"slurm:{env['SLURM_JOB_ID']}"
    return None


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, killed but not yet reaped by its parent, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[:1] != ["Z"]


def _read(path: Path) -> dict[str, Any] | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _write_synced(path: Path, content: dict[str, Any]) -> None:
    """Write ``content`` to a new file and fsync it: linked or renamed into place afterwards, it
    is whole on disk before its name is."""
    with path.open("w", encoding="utf-8") as handle:
        handle.write(json.dumps(content))
        handle.flush()
        os.fsync(handle.fileno())


def _state(path: Path) -> tuple[int, int, int] | None:
    """What identifies one version of a file (inode, modification time, size), or None if gone."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_ino, st.st_mtime_ns, st.st_size


@dataclass
class Claim:
    """A held claim; beats in a thread until released."""

    store: ClaimStore
    name: str
    content: dict[str, Any]
    on_lost: Callable[[Claim], None] | None = None
    lost: threading.Event = field(default_factory=threading.Event)
    _stop: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _thread: threading.Thread | None = None

    @property
    def path(self) -> Path:
        return self.store.path(self.name)

    def held(self) -> bool:
        """Whether the file still names this claim (checked on disk)."""
        current = _read(self.path)
        return current is not None and current.get("token") == self.content["token"]

    def check(self) -> None:
        """Raise :class:`ClaimLost` unless this worker still holds the claim: call before writing a record."""
        if self.lost.is_set() or not self.held():
            self.lost.set()
            raise ClaimLost(f"the claim on {self.name} was taken by another worker")

    def beat(self) -> bool:
        """Rewrite the claim with a fresh heartbeat; False when another worker has taken it. The
        new file is written and fsynced before the lock; under it, only the check and the rename,
        so :meth:`release` never waits for a disk flush (a worker killed in that wait would leave
        its claim behind)."""
        content = self.content | {"heartbeat_at": time.time(), "beat": self.content["beat"] + 1}
        tmp = self.store.prepared(self.path, content)
        try:
            with self._lock:
                if not self.held():
                    self.lost.set()
                    return False
                if self._stop.is_set():
                    return True  # released or stopped meanwhile: nothing to keep alive
                os.replace(tmp, self.path)
                self.content = content
                return True
        finally:
            tmp.unlink(missing_ok=True)

    def start(self) -> Claim:
        def loop() -> None:
            while not self._stop.wait(self.store.heartbeat_s):
                if not self.beat() and not self._stop.is_set():
                    if self.on_lost is not None:
                        self.on_lost(self)
                    return

        self._thread = threading.Thread(target=loop, name=f"claim-{self.name}", daemon=True)
        self._thread.start()
        return self

    def release(self) -> None:
        self._stop.set()
        with self._lock:  # a heartbeat is never renamed into place after this
            if self.held():
                with contextlib.suppress(FileNotFoundError):
                    self.path.unlink()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)

    def __enter__(self) -> Claim:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class ClaimStore:
    """The claims of one study folder."""

    def __init__(
        self,
        out: Path,
        *,
        worker: str = "",
        heartbeat_s: float = HEARTBEAT_S,
        stale_after_s: float = STALE_AFTER_S,
        echo: Callable[[str], None] | None = None,
    ) -> None:
        self.root = Path(out) / CLAIMS_DIR
        self.worker = worker or f"{socket.gethostname()}:{os.getpid()}"
        self.heartbeat_s, self.stale_after_s = heartbeat_s, stale_after_s
        self.host, self.job = socket.gethostname(), job_identity()
        self.echo = echo or (lambda line: print(line, file=sys.stderr, flush=True))

    def path(self, name: str) -> Path:
        return self.root / f"{name}.json"

    def prepared(self, path: Path, content: dict[str, Any]) -> Path:
        """A new file beside ``path`` holding ``content``, on disk (fsynced): ready to be renamed over it."""
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
        _write_synced(tmp, content)
        return tmp

    def holder(self, name: str) -> dict[str, Any] | None:
        """The live claim on ``name`` (None when free or stale)."""
        content = _read(self.path(name))
        if content is None:
            return None
        return None if self.is_stale(content) else content

    def is_stale(self, content: dict[str, Any]) -> bool:
        if content.get("job") and content.get("job") == self.job and content.get("pid") != os.getpid():
            return True  # this very job, requeued: its previous run is dead
        pid = content.get("pid")
        if content.get("host") == self.host and isinstance(pid, int) and pid != os.getpid() and not _alive(pid):
            return True
        beat_at = content.get("heartbeat_at")
        return not isinstance(beat_at, int | float) or time.time() - beat_at > self.stale_after_s

    def try_claim(self, name: str, on_lost: Callable[[Claim], None] | None = None) -> Claim | None:
        """Take ``name`` if it is free or stale; None when a live worker holds it."""
        self.root.mkdir(parents=True, exist_ok=True)
        path = self.path(name)
        content = {
            "name": name,
            "token": uuid.uuid4().hex,
            "worker": self.worker,
            "host": self.host,
            "pid": os.getpid(),
            "job": self.job,
            "claimed_at": time.time(),
            "heartbeat_at": time.time(),
            "beat": 0,
        }
        for _ in range(3):
            tmp = path.with_name(f".{path.name}.{content['token']}")
            _write_synced(tmp, content)
            try:
                os.link(tmp, path)
            except FileExistsError:
                current = _read(path)
                if current is None:  # unreadable: live while young, broken once older than the stale limit
                    if not self._break_damaged(path):
                        return None
                    continue
                if not self.is_stale(current):
                    return None
                self._break(path, current)
                continue
            finally:
                tmp.unlink(missing_ok=True)
            return Claim(self, name, content, on_lost).start()
        return None

    def _break(self, path: Path, seen: dict[str, Any]) -> None:
        tomb = path.with_name(f".{path.stem}.broken-{seen.get('token')}-{seen.get('beat')}")
        try:
            os.link(path, tomb)
        except (FileExistsError, FileNotFoundError):
            return  # another taker broke this very state, or the claim is gone already
        try:
            if _read(tomb) == seen:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
        finally:
            tomb.unlink(missing_ok=True)

    def _break_damaged(self, path: Path) -> bool:
        """Break an unreadable claim whose file has not changed for ``stale_after_s`` (True), or
        leave it (False: it may be a holder's file caught mid-write, or a young one). Race-free
        like :meth:`_break`: the version seen is linked to a name of its own, checked, removed."""
        seen = _state(path)
        if seen is None:
            return True  # gone meanwhile: try again
        if time.time() - seen[1] / 1e9 <= self.stale_after_s or _read(path) is not None:
            return False
        tomb = path.with_name(f".{path.stem}.damaged-{seen[0]}-{seen[1]}")
        try:
            os.link(path, tomb)
        except (FileExistsError, FileNotFoundError):
            return True
        try:
            if _state(tomb) == seen:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
                self.echo(
                    f"[study] {path}: an unreadable claim unchanged for over {self.stale_after_s:g} s "
                    "(empty, cut or not an object) was broken"
                )
        finally:
            tomb.unlink(missing_ok=True)
        return True

    @contextlib.contextmanager
    def waiting(
        self, name: str, poll_s: float = 1.0, on_wait: Callable[[dict[str, Any]], None] | None = None
    ) -> Iterator[Claim]:
        """Hold ``name``, waiting while a live worker holds it."""
        while True:
            claim = self.try_claim(name)
            if claim is not None:
                break
            if on_wait is not None and (holder := self.holder(name)):
                on_wait(holder)
            time.sleep(poll_s)
        try:
            yield claim
        finally:
            claim.release()
