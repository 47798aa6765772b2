"""Read a TIDE snapshot directory (the Hugging Face Hub layout) into :class:`TideItem` s.

Layout, per the dataset card: ``metadata/<persona>_metadata.json`` (one per persona) and
``conversations/<persona>_<...>.json`` holding that persona's conversations. The exact JSON
keys are not public outside the gate, so the known candidates are mapped explicitly below;
when none matches, the problem is reported with the file, line and the keys that were found.

Accepted conversation-file shapes (``C`` = the conversations container):

* ``{"conversations": C, ...}`` or ``C`` itself (keys starting with ``_`` and ``persona_id``
  are metadata);
* ``C`` is a mapping ``conversation_id -> conversation`` or a list of conversations;
* a conversation is a list of turns, or a mapping with a turn list under one of
  ``TURN_LIST_KEYS``, or a single exchange mapping, or numbered flat keys
  (``person_1``, ``chatbot_1``, ``person_2``...);
* a turn is an exchange ``{CLIENT_KEY: ..., REFERENCE_KEY: ...}`` or a role/content message
  (consecutive client and reference messages are paired).

Problems are collected, not raised, so ``tide-bench data validate`` can list them all;
:func:`tide_bench.data.sources.load_dataset` raises on the first error. What the reader found
(file-name pattern, container, conversation form, exchanges per conversation) is counted in
:class:`ShapeReport`, so a user with the real snapshot sees at a glance which path it took.

Ambiguity is an error, never a silent choice: a turn with two candidate client keys (``person``
and ``client``), a non-string scenario, ``NaN`` in any file, or a metadata ``persona_id`` that
disagrees with its file name.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tide_bench.core.errors import format_location
from tide_bench.data.schema import TideItem, make_item_id
from tide_bench.data.splits import split_of

CLIENT_KEYS = ("person", "client", "user", "user_input", "patient", "human", "seeker")
REFERENCE_KEYS = ("chatbot", "assistant", "reference_response", "response", "therapist", "bot", "supporter")
SCENARIO_KEYS = ("scenario", "emotional_scenario", "scenario_type", "category", "emotion_category", "emotion")
TURN_LIST_KEYS = ("turns", "dialogue", "dialog", "exchanges", "messages")
ROLE_KEYS = ("role", "speaker", "from")
TEXT_KEYS = ("content", "text", "value", "utterance")
CLIENT_ROLES = {"user", "client", "person", "patient", "human", "seeker"}
REFERENCE_ROLES = {"assistant", "chatbot", "therapist", "bot", "supporter", "gpt"}
FILE_META_KEYS = {"persona_id", "persona", "metadata"}
_SAFE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")


@dataclass
class Problem:
    """One thing wrong with the data, located as precisely as the format allows."""

    severity: str  # "error" or "warning"
    message: str
    path: str | None = None
    line: int | None = None
    field: str | None = None

    def location(self) -> str:
        return format_location(self.path, self.line, self.field)

    def __str__(self) -> str:
        loc = self.location()
        return f"{self.severity}: {loc}: {self.message}" if loc else f"{self.severity}: {self.message}"


@dataclass
class ShapeReport:
    """How the snapshot is laid out, counted as the reader goes (``data validate`` prints it)."""

    file_patterns: Counter[str] = field(default_factory=Counter)
    containers: Counter[str] = field(default_factory=Counter)
    conversation_forms: Counter[str] = field(default_factory=Counter)
    exchanges: Counter[int] = field(default_factory=Counter)

    def to_dict(self) -> dict[str, Any]:
        return {
            "file_patterns": dict(self.file_patterns.most_common()),
            "containers": dict(self.containers.most_common()),
            "conversation_forms": dict(self.conversation_forms.most_common()),
            "exchanges_per_conversation": {str(k): v for k, v in sorted(self.exchanges.items())},
        }

    def summary(self) -> str:
        """One line: "one exchange per conversation (40)" or the mix of counts."""
        if not self.exchanges:
            return "no conversations read"
        if len(self.exchanges) == 1:
            ((n, count),) = self.exchanges.items()
            what = "one exchange" if n == 1 else f"{n} exchanges"
            return f"{what} per conversation ({count} conversations)"
        parts = [f"{n} exchange{'s' if n != 1 else ''}: {c}" for n, c in sorted(self.exchanges.items())]
        return "mixed: " + ", ".join(parts) + " conversations"


class _DuplicateKey(ValueError):
    pass


class _NonFinite(ValueError):
    pass


def _reject_constant(name: str) -> float:
    """``json`` accepts NaN/Infinity, which are not JSON and break every statistic: refuse them."""
    raise _NonFinite(name)


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise _DuplicateKey(key)
        seen[key] = value
    return seen


def _line_of(text: str, needle: str) -> int | None:
    pos = text.find(json.dumps(needle))
    return None if pos < 0 else text.count("\n", 0, pos) + 1


def _first_key(mapping: dict[str, Any], candidates: tuple[str, ...]) -> str | None:
    lowered = {k.lower(): k for k in mapping}
    for cand in candidates:
        if cand in lowered:
            return lowered[cand]
    return None


def _all_keys(mapping: dict[str, Any], candidates: tuple[str, ...]) -> list[str]:
    """Every key of ``mapping`` that is one of ``candidates`` (case-insensitive), in candidate order."""
    lowered = {k.lower(): k for k in mapping}
    return [lowered[c] for c in candidates if c in lowered]


def _file_pattern(name: str) -> str:
    """``"12_conversations.json"`` -> ``"N_conversations.json"``: the naming scheme, not the id."""
    return re.sub(r"^[^_.]+", "N", name)


class SnapshotReader:
    """Parses one snapshot directory, accumulating items and problems."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        self.items: list[TideItem] = []
        self.problems: list[Problem] = []
        self.personas_with_metadata: set[str] = set()
        self.shape = ShapeReport()

    # ------------------------------------------------------------------ helpers
    def _problem(self, severity: str, message: str, path: Path | None = None, **kw: Any) -> None:
        rel = (
            str(path.relative_to(self.root))
            if path and path.is_relative_to(self.root)
            else (str(path) if path else None)
        )
        self.problems.append(Problem(severity, message, rel, **kw))

    def _load(self, path: Path) -> tuple[Any, str] | None:
        if path.is_dir():
            self._problem("error", "is a directory, not a JSON file", path)
            return None
        try:
            raw = path.read_bytes()
        except OSError as exc:  # a symlink loop, a dangling link, no permission
            self._problem("error", f"cannot read the file: {exc.strerror or type(exc).__name__}", path)
            return None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            self._problem("error", f"invalid UTF-8 at byte {exc.start}", path, line=raw[: exc.start].count(b"\n") + 1)
            return None
        try:
            return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_reject_constant), text
        except _DuplicateKey as exc:
            self._problem(
                "error", f"duplicate key {exc.args[0]!r} in one JSON object", path, line=_line_of(text, exc.args[0])
            )
        except _NonFinite as exc:
            pos = text.find(exc.args[0])
            line = text.count("\n", 0, pos) + 1 if pos >= 0 else None
            self._problem("error", f"{exc.args[0]} is not valid JSON (use null for a missing value)", path, line=line)
        except json.JSONDecodeError as exc:
            self._problem("error", f"invalid JSON: {exc.msg} (column {exc.colno})", path, line=exc.lineno)
        return None

    # ------------------------------------------------------------------ public
    def read(self) -> SnapshotReader:
        if not self.root.exists():
            self._problem("error", f"data directory does not exist: {self.root}")
            return self
        if not self.root.is_dir():
            self._problem("error", f"not a directory: {self.root}")
            return self
        conv_dir, meta_dir = self.root / "conversations", self.root / "metadata"
        if not conv_dir.is_dir():
            found = sorted(p.name for p in self.root.iterdir())[:10]
            self._problem(
                "error",
                f"no 'conversations/' folder in {self.root} (found: {', '.join(found) or 'nothing'}); "
                "expected the TIDE hub layout with conversations/ and metadata/",
            )
            return self
        metadata = self._read_metadata(meta_dir)
        files = sorted(conv_dir.glob("*.json"))
        if not files:
            self._problem("error", f"no *.json files in {conv_dir}")
        seen_personas: dict[str, Path] = {}
        for path in files:
            self._read_conversation_file(path, metadata, seen_personas)
        for pid in sorted(set(metadata) - set(seen_personas)):
            self._problem(
                "warning", f"persona {pid} has metadata but no conversation file", meta_dir / f"{pid}_metadata.json"
            )
        return self

    def _read_metadata(self, meta_dir: Path) -> dict[str, dict[str, Any]]:
        metadata: dict[str, dict[str, Any]] = {}
        if not meta_dir.is_dir():
            self._problem("warning", "no 'metadata/' folder: persona metadata will be empty", self.root)
            return metadata
        for path in sorted(meta_dir.glob("*.json")):
            pid = path.name.split("_", 1)[0]
            loaded = self._load(path)
            if loaded is None:
                continue
            value, text = loaded
            if not isinstance(value, dict):
                self._problem(
                    "error", f"persona metadata must be a JSON object, got {type(value).__name__}", path, line=1
                )
                continue
            if self._id_disagrees(value, pid, path, text):
                continue
            if pid in metadata:
                self._problem("error", f"two metadata files for persona {pid}", path)
            metadata[pid] = {k: v for k, v in value.items() if not k.startswith("_")}
        self.personas_with_metadata = set(metadata)
        return metadata

    def _id_disagrees(self, obj: dict, pid: str, path: Path, text: str) -> bool:
        """Whether a file's own ``persona_id`` contradicts its file name (recorded as an error)."""
        if "persona_id" not in obj or str(obj["persona_id"]) == pid:
            return False
        self._problem(
            "error",
            f"persona_id {obj['persona_id']!r} disagrees with the file name ({pid!r})",
            path,
            line=_line_of(text, "persona_id"),
            field="persona_id",
        )
        return True

    def _read_conversation_file(self, path: Path, metadata: dict[str, dict], seen: dict[str, Path]) -> None:
        pid = path.name.split("_", 1)[0].removesuffix(".json")
        loaded = self._load(path)
        if loaded is None:
            return
        obj, text = loaded
        if isinstance(obj, dict) and self._id_disagrees(obj, pid, path, text):
            return
        if not _SAFE_ID.match(pid):
            self._problem("error", f"persona id {pid!r} (from the file name) is not a safe identifier", path)
            return
        if pid in seen:
            self._problem("error", f"duplicate persona id {pid}: also in {seen[pid].name}", path)
            return
        seen[pid] = path
        if pid not in metadata:
            self._problem("warning", f"no metadata/{pid}_metadata.json: persona metadata will be empty", path)
        wrapped = isinstance(obj, dict) and "conversations" in obj
        container = obj["conversations"] if wrapped else obj
        where = ' under "conversations"' if wrapped else ""
        if isinstance(container, dict):
            conversations = [(k, v) for k, v in container.items() if not k.startswith("_") and k not in FILE_META_KEYS]
            self.shape.containers["an object keyed by conversation id" + where] += 1
        elif isinstance(container, list):
            conversations = [(f"conversation_{i}", v) for i, v in enumerate(container, start=1)]
            self.shape.containers["a list of conversations" + where] += 1
        else:
            self._problem(
                "error", f"expected an object or list of conversations, got {type(container).__name__}", path, line=1
            )
            return
        self.shape.file_patterns[f"conversations/{_file_pattern(path.name)}"] += 1
        if not conversations:
            self._problem("error", "file holds no conversations", path, line=1)
        seen_ids: set[str] = set()
        for conv_id, conv in conversations:
            self._read_conversation(path, text, pid, str(conv_id), conv, metadata.get(pid, {}), seen_ids)

    def _read_conversation(
        self, path: Path, text: str, pid: str, conv_id: str, conv: Any, persona: dict, seen_ids: set[str]
    ) -> None:
        line = _line_of(text, conv_id)
        if isinstance(conv, dict):
            explicit = conv.get("conversation_id", conv.get("id"))
            if isinstance(explicit, (str, int)) and not isinstance(explicit, bool):
                conv_id = str(explicit)
        if not _SAFE_ID.match(conv_id):
            self._problem("error", f"conversation id {conv_id!r} is not a safe identifier", path, line=line)
            return
        if conv_id in seen_ids:
            self._problem("error", f"duplicate conversation id {conv_id!r} in one file", path, line=line, field=conv_id)
            return
        seen_ids.add(conv_id)
        scenario = self._scenario(path, line, conv_id, conv)
        if scenario is False:
            return
        turns = self._turns(path, line, conv_id, conv)
        if turns is None:
            return
        self.shape.exchanges[len(turns)] += 1
        history: list[dict[str, str]] = []
        for number, (client, reference) in enumerate(turns, start=1):
            where = f"{conv_id}.turn{number}"
            if not client.strip():
                self._problem("error", "empty client utterance", path, line=line, field=f"{where}.client")
                return
            if not reference.strip():
                self._problem("error", "empty reference reply", path, line=line, field=f"{where}.reference")
                return
            self.items.append(
                TideItem(
                    item_id=make_item_id(pid, conv_id, number),
                    persona_id=pid,
                    conversation_id=conv_id,
                    turn=number,
                    scenario=scenario,
                    split=split_of(pid),
                    client_utterance=client,
                    reference_reply=reference,
                    history=list(history),
                    persona=persona,
                )
            )
            history += [{"role": "user", "content": client}, {"role": "assistant", "content": reference}]

    def _scenario(self, path: Path, line: int | None, conv_id: str, conv: Any) -> str | bool | None:
        """The conversation's scenario label, ``None`` when it has none, ``False`` after an error."""
        if not isinstance(conv, dict):
            return None
        keys = _all_keys(conv, SCENARIO_KEYS)
        if not keys:
            return None
        if len(keys) > 1:
            self._problem(
                "warning",
                f"several scenario keys {keys}: using {keys[0]!r}",
                path,
                line=line,
                field=f"{conv_id}.{keys[0]}",
            )
        value = conv[keys[0]]
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        if not isinstance(value, str):
            self._problem(
                "error",
                f"scenario must be a string, got {type(value).__name__}",
                path,
                line=line,
                field=f"{conv_id}.{keys[0]}",
            )
            return False
        return value.strip()

    def _turns(self, path: Path, line: int | None, conv_id: str, conv: Any) -> list[tuple[str, str]] | None:
        """Normalise one conversation into ``[(client, reference), ...]`` or report why not."""
        if isinstance(conv, dict):
            list_key = _first_key(conv, TURN_LIST_KEYS)
            fits = [
                name
                for name, fit in (
                    (
                        f"a list of exchanges under {list_key!r}",
                        list_key is not None and isinstance(conv[list_key], list),
                    ),
                    (
                        "one exchange object (client and reference keys)",
                        _first_key(conv, CLIENT_KEYS) is not None or _first_key(conv, REFERENCE_KEYS) is not None,
                    ),
                    ("numbered keys (person_1, chatbot_1, ...)", bool(self._numbered_turns(conv))),
                )
                if fit
            ]
            if len(fits) > 1:
                self._problem(
                    "error",
                    f"conversation {conv_id} fits two conversation shapes, {' and '.join(fits)} (keys "
                    f"{sorted(conv)}): which turns it holds would be a guess; keep one shape",
                    path,
                    line=line,
                    field=conv_id,
                )
                return None
            if list_key is not None and isinstance(conv[list_key], list):
                self.shape.conversation_forms[f"a list of exchanges under {list_key!r}"] += 1
                return self._turns_from_list(path, line, conv_id, conv[list_key], list_key)
            if _first_key(conv, CLIENT_KEYS) is not None or _first_key(conv, REFERENCE_KEYS) is not None:
                self.shape.conversation_forms["one exchange object (client and reference keys)"] += 1
                return self._turns_from_list(path, line, conv_id, [conv], None)
            numbered = self._numbered_turns(conv)
            if numbered:
                self.shape.conversation_forms["numbered keys (person_1, chatbot_1, ...)"] += 1
                return self._turns_from_list(path, line, conv_id, numbered, None)
            self._problem(
                "error",
                f"conversation {conv_id}: no turns found; expected a list under one of {list(TURN_LIST_KEYS)}, "
                f"or client/reference keys ({list(CLIENT_KEYS)} / {list(REFERENCE_KEYS)}); found keys {sorted(conv)}",
                path,
                line=line,
                field=conv_id,
            )
            return None
        if isinstance(conv, list):
            self.shape.conversation_forms["a list of exchanges or messages"] += 1
            return self._turns_from_list(path, line, conv_id, conv, None)
        self._problem(
            "error",
            f"conversation {conv_id}: expected an object or list, got {type(conv).__name__}",
            path,
            line=line,
            field=conv_id,
        )
        return None

    @staticmethod
    def _numbered_turns(conv: dict[str, Any]) -> list[dict[str, Any]]:
        pattern = re.compile(r"^([a-z_]+?)[_ ]?(\d+)$")
        by_number: dict[int, dict[str, Any]] = {}
        for key, value in conv.items():
            match = pattern.match(key.lower())
            if match and match.group(1) in CLIENT_KEYS + REFERENCE_KEYS:
                by_number.setdefault(int(match.group(2)), {})[match.group(1)] = value
        return [by_number[n] for n in sorted(by_number)]

    def _turns_from_list(
        self, path: Path, line: int | None, conv_id: str, entries: list, list_key: str | None
    ) -> list[tuple[str, str]] | None:
        if not entries:
            self._problem("error", f"conversation {conv_id} has no turns", path, line=line, field=conv_id)
            return None
        if all(isinstance(e, dict) and _first_key(e, ROLE_KEYS) for e in entries):
            return self._pair_messages(path, line, conv_id, entries)
        pairs: list[tuple[str, str]] = []
        for number, entry in enumerate(entries, start=1):
            field = f"{conv_id}.{list_key + '.' if list_key else ''}turn{number}"
            if not isinstance(entry, dict):
                self._problem(
                    "error", f"turn must be an object, got {type(entry).__name__}", path, line=line, field=field
                )
                return None
            for what, candidates in (("client utterance", CLIENT_KEYS), ("reference reply", REFERENCE_KEYS)):
                present = _all_keys(entry, candidates)
                if len(present) > 1:
                    self._problem(
                        "error",
                        f"ambiguous {what}: both {present[0]!r} and {present[1]!r} are present",
                        path,
                        line=line,
                        field=field,
                    )
                    return None
            ckey, rkey = _first_key(entry, CLIENT_KEYS), _first_key(entry, REFERENCE_KEYS)
            if ckey is None:
                self._problem(
                    "error",
                    f"no client utterance: expected one of {list(CLIENT_KEYS)}, found keys {sorted(entry)}",
                    path,
                    line=line,
                    field=field,
                )
                return None
            if rkey is None:
                self._problem(
                    "error",
                    f"no reference reply: expected one of {list(REFERENCE_KEYS)}, found keys {sorted(entry)}",
                    path,
                    line=line,
                    field=field,
                )
                return None
            client, reference = entry[ckey], entry[rkey]
            if not isinstance(client, str) or not isinstance(reference, str):
                self._problem(
                    "error", "client utterance and reference reply must be strings", path, line=line, field=field
                )
                return None
            pairs.append((client, reference))
        return pairs

    def _pair_messages(
        self, path: Path, line: int | None, conv_id: str, messages: list[dict]
    ) -> list[tuple[str, str]] | None:
        pairs: list[tuple[str, str]] = []
        pending: str | None = None
        for number, msg in enumerate(messages, start=1):
            role = str(msg[_first_key(msg, ROLE_KEYS)]).lower()
            text_key = _first_key(msg, TEXT_KEYS)
            text = msg.get(text_key) if text_key else None
            field = f"{conv_id}.message{number}"
            if not isinstance(text, str):
                self._problem(
                    "error", f"message has no text: expected one of {list(TEXT_KEYS)}", path, line=line, field=field
                )
                return None
            if role in CLIENT_ROLES:
                if pending is not None:
                    self._problem(
                        "error",
                        "two client messages in a row: the first has no reference reply",
                        path,
                        line=line,
                        field=field,
                    )
                    return None
                pending = text
            elif role in REFERENCE_ROLES:
                if pending is None:
                    self._problem(
                        "error", "reference reply without a preceding client message", path, line=line, field=field
                    )
                    return None
                pairs.append((pending, text))
                pending = None
            else:
                self._problem("error", f"unknown role {role!r}", path, line=line, field=field)
                return None
        if pending is not None:
            self._problem("error", "last client message has no reference reply", path, line=line, field=conv_id)
            return None
        return pairs
