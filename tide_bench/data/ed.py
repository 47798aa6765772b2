"""EmpatheticDialogues (Rashkin et al., ACL 2019) from the user's own copy: the release tarball
(``empatheticdialogues.tar.gz``) or the folder it unpacks to (``train.csv``, ``valid.csv``,
``test.csv``, possibly under ``empatheticdialogues/``). ED is CC BY-NC 4.0 and download-only
here: it is read in place (the tarball's members in memory, never extracted), never copied.

The release's CSV quirks, handled the way its own loader and HELM's do:

* commas inside text are written ``_comma_`` (restored to ``,``);
* there is no quoting: a ``"`` is a literal character (``csv.QUOTE_NONE``); a default CSV
  reader treats it as a quote and swallows the lines that follow;
* some rows do not split into the header's 8 fields (a raw comma in the text, upstream
  issue #40). Such a row cannot be read without guessing, so it is left out **and reported**
  (``tide-bench data validate --data ed:PATH`` lists each with its file and line; the count is
  in every result's provenance), and a conversation that loses its first two utterances to it
  yields no item, reported too.

One item per conversation: the speaker's situation (``prompt``) and first utterance
(``utterance_idx`` 1) as the message to answer, and the listener's reply (``utterance_idx`` 2)
as the human reference. ``persona_id`` is the speaker (``speaker-<speaker_idx>``), so every
confidence interval resamples speakers, not utterances; ``scenario`` is the emotion label
(``context``, one of 32); the split is the release's own (``valid`` -> ``validation``).
"""

from __future__ import annotations

import hashlib
import io
import tarfile
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from tide_bench.core.errors import DataError
from tide_bench.core.hashing import sha256_json
from tide_bench.core.jsonio import read_bytes
from tide_bench.data.schema import TideItem, make_item_id
from tide_bench.data.snapshot import Problem

COLUMNS = ("conv_id", "utterance_idx", "context", "prompt", "speaker_idx", "utterance", "selfeval", "tags")
SPLIT_FILES = {"train.csv": "train", "valid.csv": "validation", "test.csv": "test"}
SPLIT_VERSION = "ed-release-v1"  # the release's own train/valid/test files
MAX_MEMBER_BYTES = 200_000_000
MAX_MEMBERS = 1_000  # the release holds a folder and three CSV files
EMOTIONS = (
    "afraid", "angry", "annoyed", "anticipating", "anxious", "apprehensive", "ashamed", "caring",
    "confident", "content", "devastated", "disappointed", "disgusted", "embarrassed", "excited",
    "faithful", "furious", "grateful", "guilty", "hopeful", "impressed", "jealous", "joyful", "lonely",
    "nostalgic", "prepared", "proud", "sad", "sentimental", "surprised", "terrified", "trusting",
)  # fmt: skip
SPEAKER_PREFIX = "speaker-"


def restore(text: str) -> str:
    return text.replace("_comma_", ",").strip()


@dataclass
class EDReport:
    """What reading the release found: counts, and every row or conversation left out."""

    problems: list[Problem] = field(default_factory=list)
    rows: Counter = field(default_factory=Counter)  # split -> rows read
    broken_rows: int = 0
    skipped_conversations: int = 0
    files: dict[str, str] = field(default_factory=dict)  # member name -> sha256 of its bytes

    def summary(self) -> dict:
        return {
            "rows": dict(self.rows),
            "broken_rows": self.broken_rows,
            "skipped_conversations": self.skipped_conversations,
            "files_sha256": dict(sorted(self.files.items())),
        }


def _members(path: Path) -> dict[str, tuple[str, bytes]]:
    """``{split file name: (display name, bytes)}`` from the tarball or the folder."""
    found: dict[str, tuple[str, bytes]] = {}
    if path.is_file():
        try:
            with tarfile.open(path, "r:*") as tar:
                for count, member in enumerate(tar, start=1):  # streamed: a tarball of a million headers stops early
                    if count > MAX_MEMBERS:
                        raise DataError(f"holds more than {MAX_MEMBERS} members: not the ED release", path=path)
                    name = Path(member.name).name
                    if name not in SPLIT_FILES or not member.isreg():
                        continue
                    if member.size > MAX_MEMBER_BYTES:
                        raise DataError(f"member {member.name} is {member.size} bytes: too large", path=path)
                    handle = tar.extractfile(member)
                    if handle is not None and name not in found:
                        found[name] = (f"{path.name}:{member.name}", handle.read())
        except (tarfile.TarError, EOFError, OSError) as exc:
            raise DataError(f"not a readable EmpatheticDialogues tarball ({exc})", path=path) from None
        return found
    for folder in (path, path / "empatheticdialogues"):
        for name in SPLIT_FILES:
            file = folder / name
            if file.is_file() and name not in found:
                found[name] = (str(file), read_bytes(file, DataError, max_bytes=MAX_MEMBER_BYTES))
    return found


def read_ed(path: str | Path) -> tuple[list[TideItem], EDReport]:
    """Items and the report of one ED release (tarball or folder)."""
    root = Path(path).expanduser()
    if not root.exists():
        raise DataError(
            "does not exist", path=root, hint="pass the EmpatheticDialogues tarball or the folder it unpacks to"
        )
    members = _members(root)
    if not members:
        raise DataError(
            f"no EmpatheticDialogues split files ({', '.join(SPLIT_FILES)}) here",
            path=root,
            hint="pass empatheticdialogues.tar.gz or the folder holding train.csv / valid.csv / test.csv",
        )
    report = EDReport()
    items: list[TideItem] = []
    seen_convs: dict[str, str] = {}
    for name, (display, raw) in sorted(members.items(), key=lambda kv: list(SPLIT_FILES).index(kv[0])):
        report.files[name] = hashlib.sha256(raw).hexdigest()
        split = SPLIT_FILES[name]
        items += _read_split(display, raw, split, report, seen_convs)
    return items, report


def _read_split(display: str, raw: bytes, split: str, report: EDReport, seen: dict[str, str]) -> list[TideItem]:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        report.problems.append(Problem("error", f"is not UTF-8 text (byte {exc.start})", display))
        return []
    lines = io.StringIO(text, newline=None).read().split("\n")
    header = [h.strip() for h in lines[0].split(",")] if lines else []
    if header[: len(COLUMNS)] != list(COLUMNS):
        report.problems.append(
            Problem("error", f"header is {','.join(header)[:200]!r}, expected {','.join(COLUMNS)}", display, 1)
        )
        return []
    conversations: dict[str, dict[int, tuple[int, list[str]]]] = defaultdict(dict)
    broken_convs: Counter = Counter()
    for number, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        fields = line.split(",")
        if len(fields) == len(COLUMNS) - 1:  # a row without the trailing empty tags field
            fields.append("")
        if len(fields) != len(COLUMNS):
            report.broken_rows += 1
            if fields[0].strip():
                broken_convs[fields[0].strip()] += 1
            report.problems.append(
                Problem(
                    "warning",
                    f"has {len(fields)} fields, the header {len(COLUMNS)} (a raw comma in the text?): row left out",
                    display,
                    number,
                )
            )
            continue
        conv_id, utterance_idx, speaker_idx = fields[0].strip(), fields[1].strip(), fields[4].strip()
        if not (conv_id and utterance_idx.isdigit() and speaker_idx.isdigit()):
            report.broken_rows += 1
            if conv_id:
                broken_convs[conv_id] += 1
            report.problems.append(
                Problem("warning", "conv_id, utterance_idx or speaker_idx unreadable: row left out", display, number)
            )
            continue
        report.rows[split] += 1
        turn = int(utterance_idx)
        if turn in conversations[conv_id]:
            report.problems.append(
                Problem("warning", f"repeats utterance {turn} of {conv_id}: the first is kept", display, number)
            )
            continue
        conversations[conv_id][turn] = (number, fields)
    items = []
    for conv_id, turns in conversations.items():
        if conv_id in seen:
            report.problems.append(Problem("error", f"conversation {conv_id} is also in {seen[conv_id]}", display))
            continue
        seen[conv_id] = display
        if 1 not in turns or 2 not in turns:
            report.skipped_conversations += 1
            missing = "the speaker's first utterance" if 1 not in turns else "the listener's reply (utterance 2)"
            why = " (lost to a broken row)" if broken_convs[conv_id] else ""
            line = next(iter(turns.values()))[0]
            report.problems.append(
                Problem("warning", f"conversation {conv_id} lacks {missing}{why}: no item", display, line)
            )
            continue
        item = _item(conv_id, turns[1], turns[2], split, display, report)
        if item is not None:
            items.append(item)
    return items


def _item(
    conv_id: str,
    first: tuple[int, list[str]],
    second: tuple[int, list[str]],
    split: str,
    display: str,
    report: EDReport,
) -> TideItem | None:
    line, speaker = first
    _, listener = second
    situation, utterance, reply = restore(speaker[3]), restore(speaker[5]), restore(listener[5])
    emotion = speaker[2].strip()
    if not utterance or not reply:
        report.skipped_conversations += 1
        report.problems.append(
            Problem("warning", f"conversation {conv_id} has an empty utterance: no item", display, line)
        )
        return None
    if emotion not in EMOTIONS:
        report.problems.append(
            Problem("warning", f"emotion {emotion!r} is not one of the 32 ED labels", display, line, "context")
        )
    if speaker[4].strip() == listener[4].strip():
        report.problems.append(
            Problem("warning", f"conversation {conv_id}: utterances 1 and 2 have the same speaker_idx", display, line)
        )
    persona_id = SPEAKER_PREFIX + speaker[4].strip()
    return TideItem(
        item_id=make_item_id(persona_id, conv_id, 1),
        persona_id=persona_id,
        conversation_id=conv_id,
        turn=1,
        scenario=emotion or None,
        split=split,
        client_utterance=client_message(situation, utterance),
        reference_reply=reply,
        history=[],
        persona={
            "dataset": "EmpatheticDialogues",
            "emotion": emotion,
            "situation": situation,
            "first_utterance": utterance,
            "speaker_idx": int(speaker[4]),
            "listener_idx": int(listener[4].strip()),
        },
    )


def client_message(situation: str, utterance: str) -> str:
    """The message a model answers: the speaker's situation, then their opening utterance (the
    ED listener saw only the utterance; docs/tasks.md, "EmpatheticDialogues")."""
    return f"{situation}\n\n{utterance}" if situation and situation != utterance else utterance


def release_hash(report: EDReport) -> str:
    return sha256_json(report.files)
