"""The adapter folder: refuse to mix runs, find the checkpoint to resume, tidy up at the end.

Layout (Trainer's own): ``OUT/checkpoint-N/`` while training (adapter, optimizer, scheduler,
RNG and trainer state), ``OUT/finetune_config.json`` (the settings, so ``--resume`` can
check it continues the same run), ``OUT/history.jsonl`` (the log as it goes), and at the
end the adapter itself, its tokenizer, ``adapter_card.json`` and ``loss_curve.svg``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from tide_bench.core.errors import ConfigError
from tide_bench.core.jsonio import read_json, write_json
from tide_bench.finetune.config import FinetuneConfig
from tide_bench.generation.manifest import ADAPTER_CARD

CONFIG_FILE = "finetune_config.json"
CHECKPOINT_PREFIX = "checkpoint-"
TRAINER_STATE = "trainer_state.json"
OWNED_FILES = (CONFIG_FILE, ADAPTER_CARD)  # a folder holding one of these was written by `tide-bench finetune`


def _checkpoints(out: Path) -> list[Path]:
    found = [p for p in out.glob(f"{CHECKPOINT_PREFIX}*") if p.is_dir() and p.name[len(CHECKPOINT_PREFIX) :].isdigit()]
    return sorted(found, key=lambda p: int(p.name[len(CHECKPOINT_PREFIX) :]))


def complete_checkpoints(out: Path) -> list[Path]:
    """Checkpoints Trainer finished writing (it writes ``trainer_state.json`` last: a kill during a
    save leaves a folder without it, which resuming from would fail on)."""
    return [p for p in _checkpoints(out) if (p / TRAINER_STATE).is_file()]


def saved_settings_match(config: FinetuneConfig) -> bool:
    """Whether ``config.out`` holds a run with this run's fixed settings (what a resume requires)."""
    path = Path(config.out) / CONFIG_FILE
    try:
        saved = read_json(path, ConfigError).get("fixed", {})
    except (ConfigError, AttributeError):
        return False
    return saved == config.fixed_settings()


def checkpoint_to_resume(config: FinetuneConfig) -> Path | None:
    """The checkpoint ``--resume`` continues from (None without --resume); checks it belongs to this run."""
    if not config.resume:
        return None
    out = Path(config.out)
    if config.resume == "latest":
        found = complete_checkpoints(out) if out.is_dir() else []
        if not found:
            partial = (
                " (only incomplete ones, without trainer_state.json)" if out.is_dir() and _checkpoints(out) else ""
            )
            raise ConfigError(
                f"nothing to resume in {out}: no complete {CHECKPOINT_PREFIX}N folder{partial}",
                hint="checkpoints are written every --eval-steps steps; start without --resume",
            )
        checkpoint = found[-1]
    else:
        checkpoint = Path(config.resume)
        if not (checkpoint / TRAINER_STATE).is_file():
            raise ConfigError(f"{checkpoint} is not a training checkpoint (no trainer_state.json)", path=checkpoint)
    saved_path = out / CONFIG_FILE
    if not saved_path.is_file():
        raise ConfigError(f"{out} holds no {CONFIG_FILE}: cannot check that --resume continues the same run", path=out)
    saved = read_json(saved_path, ConfigError).get("fixed", {})
    current = config.fixed_settings()
    changed = [f"{k}: {saved.get(k)!r} -> {current[k]!r}" for k in current if saved.get(k) != current[k]]
    if changed:
        raise ConfigError(
            f"--resume must continue the same run, but settings differ: {'; '.join(changed)}",
            path=saved_path,
            hint="resume with the original options, or start a new --out",
        )
    return checkpoint


def check_output_folder(config: FinetuneConfig) -> None:
    """Refuse a non-empty --out unless resuming, or overwriting a folder this command wrote."""
    out = Path(config.out)
    if config.resume or not out.exists():
        return
    if out.is_file():
        raise ConfigError("--out is a file, not a folder", path=out)
    if not any(out.iterdir()):
        return
    if not config.overwrite:
        raise ConfigError(
            f"{out} is not empty",
            path=out,
            hint="choose a new --out, pass --resume to continue an interrupted run, or --overwrite",
        )
    if not any((out / name).is_file() for name in OWNED_FILES):
        raise ConfigError(f"refusing to overwrite {out}: it does not look like a tide-bench adapter folder", path=out)


def start_output_folder(config: FinetuneConfig) -> None:
    """Main process only: clear an overwritten folder and record the settings."""
    out = Path(config.out)
    if config.overwrite and out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    if not config.resume:
        write_json(out / CONFIG_FILE, {"config": config.as_dict(), "fixed": config.fixed_settings()})


def remove_checkpoints(out: Path) -> None:
    for checkpoint in _checkpoints(out):
        shutil.rmtree(checkpoint, ignore_errors=True)
