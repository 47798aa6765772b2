"""The static leaderboard and the submission workflow.

Imports every earlier stage. All displayed numbers are recomputed from the per-item samples
and judgments of each submission; numbers written by the submitter are never trusted.
Public API::

    from tide_bench.leaderboard import create_submission, validate_folder, validate_many, build_site
"""

from tide_bench.leaderboard.build import BuildResult, build_site
from tide_bench.leaderboard.config import BoardConfig, load_board
from tide_bench.leaderboard.submission.accept import validate_many
from tide_bench.leaderboard.submission.submit import SubmissionRefused, create_submission
from tide_bench.leaderboard.submission.validate import CheckResult, validate_folder

__all__ = [
    "BoardConfig",
    "BuildResult",
    "CheckResult",
    "SubmissionRefused",
    "build_site",
    "create_submission",
    "load_board",
    "validate_folder",
    "validate_many",
]
