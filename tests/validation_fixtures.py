"""Small validation packs written by the project in the upstream layouts (no upstream data).

Each builder writes the upstream files into a folder and a pack manifest (with these files'
real sha256) into a manifests folder that ``$TIDE_BENCH_VALIDATION_PACKS`` points at. The
ratings are seeded random numbers; the quirks found in the real files are planted on purpose:
MentalAlign's all-zero (unrated) cells and a 6, a fenced and a non-JSON judge cell, a judge row
whose context differs from the human row of the same ConvID; AnnoMI's panel-coded transcript
beside single-coded ones.
"""

from __future__ import annotations

import csv
import hashlib
import http.server
import json
import threading
import zipfile
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import yaml

MA_KEYS = ["original", "claude", "ds_llama", "ds_qwen", "gemini", "gpt4o", "gpt4omini", "llama_3", "qwen_2", "qwen_3"]
MA_FAMILIES = {
    "original": ["human"],
    "claude": ["claude"],
    "ds_llama": ["deepseek", "llama"],
    "ds_qwen": ["deepseek", "qwen"],
    "gemini": ["gemini"],
    "gpt4o": ["gpt"],
    "gpt4omini": ["gpt"],
    "llama_3": ["llama"],
    "qwen_2": ["qwen"],
    "qwen_3": ["qwen"],
}
MA_DIMS = ["Guidance", "Informativeness", "Relevance", "Safety", "Empathy", "Helpfulness", "Understanding"]
MA_JUDGES = {
    "Claude-3.7-Sonnet": ("claude_llm_judge.xlsx", "claude", ["claude"]),
    "GPT-4o": ("gpt-4o_llm_judge.xlsx", "gpt", ["gpt4o"]),
}
REVISION = "0123456789abcdef0123456789abcdef01234567"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _xlsx(path: Path, header: list[str], rows: list[list[Any]]) -> None:
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(header)
    for row in rows:
        sheet.append(row)
    path.parent.mkdir(parents=True, exist_ok=True)
    book.save(path)


def _cell(scores: dict[str, int]) -> str:
    return json.dumps(scores)


def mentalalign(root: Path, manifests: Path, *, name: str = "fx-mentalalign", contexts: int = 24, seed: int = 3):
    """Write the fixture; return the truth the report must reproduce (per judge and mode)."""
    rng = np.random.default_rng(seed)
    quality = rng.normal(3.8, 0.8, (contexts, len(MA_KEYS)))
    human = np.clip(np.rint(quality[..., None] + rng.normal(0, 0.6, (contexts, len(MA_KEYS), len(MA_DIMS)))), 1, 5)
    human = human.astype(int)
    human[2, 9, :] = 0  # an unrated reply: every attribute 0
    human[4, 1, 3] = 6  # out of range
    ctx = [f"context number {c}: I have been feeling low." for c in range(contexts)]
    rows = [
        [c + 1, ctx[c]] + [_cell(dict(zip(MA_DIMS, map(int, human[c, k]), strict=True))) for k in range(10)]
        for c in range(contexts)
    ]
    _xlsx(
        root / "MentalAlign-70k/Human_Judge/Human_judge.xlsx",
        ["ConvID", "context"] + [f" human_response_{k}" for k in MA_KEYS],
        rows,
    )
    judges = {}
    for j, (judge, (fname, _family, _excl)) in enumerate(MA_JUDGES.items()):
        offset = 0.4 + 0.2 * j
        scores = np.clip(np.rint(quality[..., None] + offset + rng.normal(0, 0.7, human.shape)), 1, 5).astype(int)
        cells = [
            [_cell(dict(zip(MA_DIMS, map(int, scores[c, k]), strict=True))) for k in range(10)] for c in range(contexts)
        ]
        cells[1][2] = "```json\n" + cells[1][2] + "\n```"  # fenced: parsed
        cells[3][4] = "I will rate this response."  # not JSON: missing
        jctx = list(ctx)
        jctx[5] = "a different context under the same ConvID"  # joined by ConvID alone, this pairs other replies
        _xlsx(
            root / f"MentalAlign-70k/LLMs_as_a_judge/{fname}",
            ["ConvID", "context"] + [f"judge_response_{k}" for k in MA_KEYS],
            [[c + 1, jctx[c], *cells[c]] for c in range(contexts)],
        )
        valid = np.ones((contexts, 10), bool)
        valid[3, 4] = False
        judges[judge] = (scores.astype(float), valid)
    (root / "LICENSE").write_text("MIT License\n\nCopyright (c) fixture\n")
    replies_csv = "context," + ",".join(
        [
            "response",
            "Claude-3.5-Haiku",
            "deepseek-llama",
            "deepseek-qwen",
            "Gemini",
            "gpt-4o",
            "gpt-4omini",
            "Llama-3.1",
            "Qwen-2.5",
            "Qwen-3",
        ]
    )
    lines = [replies_csv] + [
        ",".join(
            [json.dumps(ctx[c])]
            + [json.dumps(f"reply {k} to {c} " + "word " * int(3 + 5 * (k % 4))) for k in range(10)]
        )
        for c in range(contexts)
    ]
    (root / "MentalBench-100k").mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(root / "MentalBench-100k/MentalBench-100k.zip", "w") as z:
        z.writestr("MentalBench-100k.csv", "\n".join(lines) + "\n")
    files = [
        {"path": "LICENSE", "role": "licence"},
        {"path": "MentalAlign-70k/Human_Judge/Human_judge.xlsx", "role": "human_ratings"},
        *[
            {"path": f"MentalAlign-70k/LLMs_as_a_judge/{f}", "role": "published_judge", "judge": judge}
            for judge, (f, _, _) in MA_JUDGES.items()
        ],
        {"path": "MentalBench-100k/MentalBench-100k.zip", "role": "replies", "required": False},
    ]
    for f in files:
        f["sha256"] = sha256(root / f["path"])
        f["size"] = (root / f["path"]).stat().st_size
    real = yaml.safe_load((Path(__file__).parents[1] / "tide_bench/validation/packs/mentalalign.yaml").read_text())
    real |= {
        "name": name,
        "source": {"repo": "fixture/MentalBench-Align", "revision": REVISION},
        "files": files,
        "published_judges": {
            j: {"model": j.lower(), "family": fam, "authors_exclude": excl} for j, (_, fam, excl) in MA_JUDGES.items()
        },
    }
    manifests.mkdir(parents=True, exist_ok=True)
    (manifests / f"{name}.yaml").write_text(yaml.safe_dump(real, sort_keys=False))
    return {"human": human.astype(float), "judges": judges, "contexts": contexts, "mismatched_row": 5}


def annomi(root: Path, manifests: Path, *, name: str = "fx-annomi", turns: int = 40, raters: int = 5, seed: int = 5):
    """A panel-coded transcript (0) of ``turns`` client/therapist pairs plus a single-coded one (1).
    Returns the therapist codes (raters x turns)."""
    rng = np.random.default_rng(seed)
    truth = rng.random(turns) < 0.35
    codes = np.where(rng.random((raters, turns)) < 0.92, truth, ~truth)
    header = [
        "mi_quality", "transcript_id", "video_title", "video_url", "topic", "utterance_id", "interlocutor",
        "timestamp", "utterance_text", "annotator_id", "therapist_input_exists", "therapist_input_subtype",
        "reflection_exists", "reflection_subtype", "question_exists", "question_subtype",
        "main_therapist_behaviour", "client_talk_type",
    ]  # fmt: skip
    rows = []
    for a in range(raters):
        for t in range(turns):
            base = ["high", 0, "v", "u", "topic"]
            rows.append(
                [
                    *base,
                    2 * t,
                    "client",
                    "00:00",
                    f"client turn {t}, I drink too much",
                    a,
                    "n/a",
                    "",
                    "n/a",
                    "",
                    "n/a",
                    "",
                    "n/a",
                    "neutral",
                ]
            )
            rows.append(
                [
                    *base,
                    2 * t + 1,
                    "therapist",
                    "00:01",
                    f"therapist turn {t} " + "so " * (t % 7),
                    a,
                    "False",
                    "",
                    str(bool(codes[a, t])),
                    "",
                    "False",
                    "",
                    "reflection",
                    "n/a",
                ]
            )
    rows.append(
        [
            "low",
            1,
            "v",
            "u",
            "topic",
            0,
            "therapist",
            "00:00",
            "single-coded",
            0,
            "False",
            "",
            "True",
            "",
            "False",
            "",
            "other",
            "n/a",
        ]
    )
    root.mkdir(parents=True, exist_ok=True)
    with (root / "AnnoMI-full.csv").open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    (root / "README.md").write_text("# AnnoMI fixture\nNo licence stated.\n")
    files = [{"path": "README.md", "role": "licence"}, {"path": "AnnoMI-full.csv", "role": "human_ratings"}]
    for f in files:
        f["sha256"] = sha256(root / f["path"])
    real = yaml.safe_load((Path(__file__).parents[1] / "tide_bench/validation/packs/annomi.yaml").read_text())
    real |= {"name": name, "source": {"repo": "fixture/AnnoMI", "revision": REVISION}, "files": files}
    manifests.mkdir(parents=True, exist_ok=True)
    (manifests / f"{name}.yaml").write_text(yaml.safe_dump(real, sort_keys=False))
    return codes.astype(float)


class _Handler(http.server.BaseHTTPRequestHandler):
    root: Path
    mode: dict[str, Any]
    hits: list[str]

    def log_message(self, *args: Any) -> None:
        return

    def do_GET(self) -> None:
        self.hits.append(self.path)
        parts = self.path.lstrip("/").split("/", 3)  # owner/name/revision/path
        target = self.root / parts[3] if len(parts) == 4 else None
        if target is None or not target.is_file():
            self.send_response(404)
            self.end_headers()
            return
        body = target.read_bytes()
        override = self.mode.get(parts[3])
        if override == "corrupt":
            body = body[:-1] + bytes([body[-1] ^ 1])
        if override in ("long", "long-unannounced"):  # the file, then 20 MB more than the manifest pins
            body += b"\0" * 20_000_000
        self.send_response(200)
        if override != "long-unannounced":  # without a length, the body ends when the connection closes
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if override == "truncate":
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(body)


@contextmanager
def file_server(root: Path, mode: dict[str, str] | None = None):
    """Serve ``root`` on 127.0.0.1 as ``/<owner>/<name>/<revision>/<path>``; yields (base URL, hits).
    ``mode`` maps a path to how it is served wrong: ``corrupt`` (a flipped bit), ``truncate`` (half of
    the announced length), ``long`` / ``long-unannounced`` (20 MB too many, with or without a length)."""
    hits: list[str] = []
    handler = type("Handler", (_Handler,), {"root": root, "mode": mode or {}, "hits": hits})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", hits
    finally:
        server.shutdown()
        server.server_close()
