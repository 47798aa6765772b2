"""Fetch the gated TIDE dataset from the Hugging Face Hub, or explain why not.

TIDE (``yenopoya/TIDE``) is gated: a user must log in, accept the conditions on the
dataset page, and respect its licence (CC BY-NC 4.0: non-commercial use, attribution).
tide-bench never downloads anything unless the user chose the hub as the source.
"""

from __future__ import annotations

import os
from pathlib import Path

from tide_bench.core.errors import DataError

DEFAULT_REPO = "yenopoya/TIDE"
DATASET_PAGE = "https://huggingface.co/datasets/{repo}"
LICENCE = "CC BY-NC 4.0"


def _help(repo: str) -> str:
    return (
        f"TIDE is gated: log in to Hugging Face, accept the conditions at {DATASET_PAGE.format(repo=repo)}, "
        "then set HF_TOKEN (or run `huggingface-cli login`). Licence: "
        f"{LICENCE} (non-commercial). Offline: download it on a connected machine with "
        f"`huggingface-cli download {repo} --repo-type dataset --local-dir DIR` and pass --data DIR."
    )


def download_snapshot(repo: str = DEFAULT_REPO, revision: str | None = None) -> tuple[Path, str]:
    """Download (or reuse the local cache of) the dataset; return ``(path, commit)``."""
    try:
        from huggingface_hub import snapshot_download
        from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError
    except ImportError as exc:  # pragma: no cover - huggingface_hub comes with lm-eval
        raise DataError(f"huggingface_hub is not installed ({exc})", hint=_help(repo)) from None
    try:
        path = Path(
            snapshot_download(
                repo_id=repo,
                repo_type="dataset",
                revision=revision,
                token=os.environ.get("HF_TOKEN") or None,
            )
        )
    except GatedRepoError:
        raise DataError(
            f"access to {repo} is gated and this account has not been granted it", hint=_help(repo)
        ) from None
    except RepositoryNotFoundError:
        raise DataError(f"dataset {repo} not found or not visible with the current token", hint=_help(repo)) from None
    except Exception as exc:  # network errors come in many types across versions
        raise DataError(
            f"could not reach the Hugging Face Hub for {repo}: {type(exc).__name__}", hint=_help(repo)
        ) from None
    return path, path.name
