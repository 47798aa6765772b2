"""Read the authors' labelled Reddit files: the three mechanisms' CSVs, aligned by (post, reply).

The user's copy of ``behavioral-data/Empathy-Mental-Health`` is read in place (its folder, or
any folder holding the three ``*-reddit.csv`` files) and never copied: the trained model holds
weights, the files' sha256 and the TF-IDF vocabulary (word 1-2 grams found in at least two
replies), no post or reply. Each file has the
columns ``sp_id, rp_id, seeker_post, response_post, level, rationales`` (rationale spans
separated by ``|``); the three files hold the same (post, reply) pairs in the same order,
with whitespace differences in the texts (double spaces after a full stop in one file, not in
another), which are normalised, and 31 replies whose ER copy lacks the word "reddit": the first
file's text is used and the difference is reported in the corpus notes (and the model card).
Any other problem (a missing column, a level outside 0-2, a pair present in one file and not
another) is an error naming the file, line and field: a training set is never silently shortened.
"""

from __future__ import annotations

import csv
import hashlib
import io
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from tide_bench.core.errors import DataError
from tide_bench.core.hashing import sha256_json
from tide_bench.core.jsonio import read_bytes
from tide_bench.epitome.mechanisms import KEYS, LEVELS, MECHANISMS

COLUMNS = ("sp_id", "rp_id", "seeker_post", "response_post", "level", "rationales")
MAX_FILE_BYTES = 200_000_000
_SPACE = re.compile(r"\s+")


def normalise_space(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


@dataclass(frozen=True)
class LabelledPair:
    """One (seeker post, reply) pair with its level and rationale spans per mechanism."""

    sp_id: str
    rp_id: str
    seeker_post: str
    response_post: str
    levels: dict[str, int]
    rationales: dict[str, tuple[str, ...]]
    line: int  # the line in the first file (for messages)


@dataclass
class EpitomeCorpus:
    pairs: list[LabelledPair]
    files: dict[str, str]  # mechanism key -> sha256 of its file
    folder: Path
    notes: list[str] = field(default_factory=list)

    @property
    def sha256(self) -> str:
        """The data's identity: the sha256 of the three files' sha256 (in ER, IP, EX order)."""
        return sha256_json({"epitome_reddit": [self.files[k] for k in KEYS]})

    def level_counts(self) -> dict[str, list[int]]:
        out = {}
        for key in KEYS:
            counts = Counter(p.levels[key] for p in self.pairs)
            out[key] = [counts.get(level, 0) for level in LEVELS]
        return out

    def duplicates(self) -> int:
        counts = Counter((p.sp_id, p.rp_id) for p in self.pairs)
        return sum(c - 1 for c in counts.values() if c > 1)

    def summary(self) -> dict:
        return {
            "n_pairs": len(self.pairs),
            "n_seeker_posts": len({p.sp_id for p in self.pairs}),
            "duplicate_pairs": self.duplicates(),
            "level_counts": self.level_counts(),
            "sha256": self.sha256,
            "files": {m.file: self.files[m.key] for m in MECHANISMS},
        }


def find_files(folder: str | Path) -> dict[str, Path]:
    """The three Reddit CSVs in ``folder`` or its ``dataset/`` subfolder (the repository layout)."""
    root = Path(folder).expanduser()
    if not root.is_dir():
        raise DataError(
            "is not a folder",
            path=root,
            hint="pass the authors' repository folder (Empathy-Mental-Health) or a folder with its three "
            "*-reddit.csv files",
        )
    for candidate in (root, root / "dataset"):
        found = {m.key: candidate / m.file for m in MECHANISMS if (candidate / m.file).is_file()}
        if len(found) == len(MECHANISMS):
            return found
        if found:
            missing = [m.file for m in MECHANISMS if m.key not in found]
            raise DataError(f"missing {', '.join(missing)} beside {next(iter(found.values())).name}", path=candidate)
    raise DataError(
        f"no EPITOME Reddit files here (expected {', '.join(m.file for m in MECHANISMS)})",
        path=root,
        hint="git clone https://github.com/behavioral-data/Empathy-Mental-Health and pass that folder",
    )


@dataclass(frozen=True)
class _Row:
    sp_id: str
    rp_id: str
    seeker_post: str
    response_post: str
    level: int
    rationales: tuple[str, ...]
    line: int


def _read_rows(path: Path) -> tuple[list[_Row], str]:
    raw = read_bytes(path, DataError, max_bytes=MAX_FILE_BYTES)
    digest = hashlib.sha256(raw).hexdigest()
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(f"is not UTF-8 text (byte {exc.start})", path=path) from None
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
    except csv.Error as exc:
        raise DataError(f"unreadable CSV header ({exc})", path=path, line=1) from None
    if header is None:
        raise DataError("is empty", path=path)
    header = [h.strip() for h in header]
    missing = [c for c in COLUMNS if c not in header]
    if missing:
        raise DataError(f"missing column(s) {', '.join(missing)}; found {', '.join(header)}", path=path, line=1)
    index = {c: header.index(c) for c in COLUMNS}
    rows: list[_Row] = []
    start = 2
    while True:
        try:
            record = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            raise DataError(f"broken CSV row ({exc})", path=path, line=reader.line_num) from None
        line = start
        start = reader.line_num + 1
        if not record or all(not cell.strip() for cell in record):
            continue
        if len(record) != len(header):
            raise DataError(f"has {len(record)} fields, the header {len(header)}", path=path, line=line)
        values = {c: record[i] for c, i in index.items()}
        for name in ("sp_id", "rp_id", "response_post"):
            if not values[name].strip():
                raise DataError("is empty", path=path, line=line, field=name)
        level_text = values["level"].strip()
        try:
            level_value = float(level_text)
        except ValueError:
            level_value = float("nan")
        if level_value not in LEVELS:
            raise DataError(f"must be 0, 1 or 2, got {level_text[:20]!r}", path=path, line=line, field="level")
        spans = tuple(s for s in (normalise_space(r) for r in values["rationales"].split("|")) if s)
        rows.append(
            _Row(
                values["sp_id"].strip(),
                values["rp_id"].strip(),
                normalise_space(values["seeker_post"]),
                normalise_space(values["response_post"]),
                int(level_value),
                spans,
                line,
            )
        )
    if not rows:
        raise DataError("holds no labelled rows", path=path)
    return rows, digest


def read_corpus(folder: str | Path) -> EpitomeCorpus:
    """The three files, aligned: the k-th occurrence of a (post, reply) id pair in one file
    matches the k-th in the others (the files hold 61 duplicated pairs)."""
    files = find_files(folder)
    per_key: dict[str, dict[tuple[str, str, int], _Row]] = {}
    order: list[tuple[str, str, int]] = []
    hashes: dict[str, str] = {}
    for key in KEYS:
        rows, hashes[key] = _read_rows(files[key])
        seen: Counter = Counter()
        keyed = {}
        for row in rows:
            ident = (row.sp_id, row.rp_id, seen[(row.sp_id, row.rp_id)])
            seen[(row.sp_id, row.rp_id)] += 1
            keyed[ident] = row
        per_key[key] = keyed
        if key == KEYS[0]:
            order = list(keyed)
    first = KEYS[0]
    for key in KEYS[1:]:
        extra = [i for i in per_key[key] if i not in per_key[first]]
        absent = [i for i in order if i not in per_key[key]]
        for ident, other, name in ((extra, key, first), (absent, first, key)):
            if ident:
                row = per_key[other][ident[0]]
                raise DataError(
                    f"(sp_id {row.sp_id}, rp_id {row.rp_id}) is not in {files[name].name}"
                    + (f" ({len(ident) - 1} more pairs like it)" if len(ident) > 1 else ""),
                    path=files[other],
                    line=row.line,
                    hint="the three files must label the same (post, reply) pairs",
                )
    pairs = []
    differing: list[tuple[str, int]] = []
    for ident in order:
        rows = {k: per_key[k][ident] for k in KEYS}
        base = rows[first]
        differing += [(k, rows[k].line) for k in KEYS[1:] if rows[k].response_post != base.response_post]
        pairs.append(
            LabelledPair(
                base.sp_id,
                base.rp_id,
                base.seeker_post,
                base.response_post,
                {k: rows[k].level for k in KEYS},
                {k: rows[k].rationales for k in KEYS},
                base.line,
            )
        )
    corpus = EpitomeCorpus(pairs, hashes, files[first].parent)
    dupes = corpus.duplicates()
    if dupes:
        corpus.notes.append(f"{dupes} duplicated (post, reply) rows kept, as the authors' files hold them")
    if differing:
        key, line = differing[0]
        corpus.notes.append(
            f"{len({line for _, line in differing})} replies read differently in another file than in "
            f"{files[first].name} beyond whitespace (the first: {files[key].name}:{line}); "
            f"{files[first].name}'s text is used"
        )
    return corpus
