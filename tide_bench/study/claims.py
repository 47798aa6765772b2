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
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


@dataclass
class Claim:
    """A held claim; beats in a thread until released."""

    store: ClaimStore
    name: str
    content: dict[str, Any]
    on_lost: Callable[[Claim], None] | None = None
    lost: threading.Event = field(default_factory=threading.Event)
    _stop: threading.Event = field(default_factory=threading.Event)
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
        if not self.held():
            self.lost.set()
            return False
        self.content = self.content | {"heartbeat_at": time.time(), "beat": self.content["beat"] + 1}
        self.store.write_over(self.path, self.content)
        return True

    def start(self) -> Claim:
        def loop() -> None:
            while not self._stop.wait(self.store.heartbeat_s):
                if not self.beat():
                    if self.on_lost is not None:
                        self.on_lost(self)
                    return

        self._thread = threading.Thread(target=loop, name=f"claim-{self.name}", daemon=True)
        self._thread.start()
        return self

    def release(self) -> None:
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        if self.held():
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()

    def __enter__(self) -> Claim:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


class ClaimStore:
    """The claims of one study folder."""

    def __init__(
        self, out: Path, *, worker: str = "", heartbeat_s: float = HEARTBEAT_S, stale_after_s: float = STALE_AFTER_S
    ) -> None:
        self.root = Path(out) / CLAIMS_DIR
        self.worker = worker or f"{socket.gethostname()}:{os.getpid()}"
        self.heartbeat_s, self.stale_after_s = heartbeat_s, stale_after_s
        self.host, self.job = socket.gethostname(), job_identity()

    def path(self, name: str) -> Path:
        return self.root / f"{name}.json"

    def write_over(self, path: Path, content: dict[str, Any]) -> None:
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
        tmp.write_text(json.dumps(content), encoding="utf-8")
        os.replace(tmp, path)

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
            tmp.write_text(json.dumps(content), encoding="utf-8")
            try:
                os.link(tmp, path)
            except FileExistsError:
                current = _read(path)
                if current is None:  # being written over by its holder's heartbeat (os.replace is atomic): live
                    return None
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
