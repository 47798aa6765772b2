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


def _offline_help(repo: str) -> str:
    """What to do without a network comes first; the gating note after it."""
    return (
        f"download it on a connected machine with `huggingface-cli download {repo} --repo-type dataset "
        f"--local-dir DIR` (after accepting the conditions at {DATASET_PAGE.format(repo=repo)}: TIDE is gated, "
        f"{LICENCE}), copy DIR here and pass --data DIR"
    )


_NETWORK_ERRORS = ("connect", "timeout", "timedout", "nameresolution", "offlinemode", "localentrynotfound", "network")


def _why_unreachable(exc: BaseException) -> str | None:
    """``"offline mode is on (HF_HUB_OFFLINE=1)"`` or ``"no network connection"`` when ``exc`` (or
    what caused it) is a network failure; None for any other error."""
    from huggingface_hub import constants

    if constants.HF_HUB_OFFLINE:
        return "offline mode is on (HF_HUB_OFFLINE=1), and the dataset is not in the local cache"
    seen: BaseException | None = exc
    for _ in range(8):  # the exception and what it was raised from
        if seen is None:
            break
        if any(word in type(seen).__name__.lower() for word in _NETWORK_ERRORS):
            return "no connection to the Hugging Face Hub, and the dataset is not in the local cache"
        seen = seen.__cause__ or seen.__context__
    return None


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
        why = _why_unreachable(exc)
        if why is not None:
            raise DataError(
                f"no network: cannot fetch {repo} from the Hugging Face Hub: {why}", hint=_offline_help(repo)
            ) from None
        raise DataError(
            f"could not fetch {repo} from the Hugging Face Hub: {type(exc).__name__}", hint=_help(repo)
        ) from None
    return path, path.name
