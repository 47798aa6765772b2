"""Agreement: can a judge stand in for human raters, on which factor, and for whom?

Imports :mod:`tide_bench.core` (and reads judge outputs as plain files). Works on any
ratings table, human or machine. Public API::

    from tide_bench.agreement import run_audit
    report = run_audit(ratings="human_ratings.csv", raters="raters.csv",
                       judgments=["runs/x/judge/judgments.jsonl"], out="audit/")
"""

from tide_bench.agreement.alpha import alpha_with_ci, krippendorff_alpha
from tide_bench.agreement.audit import AuditOptions, run_audit
from tide_bench.agreement.pairwise import pair_metrics, weighted_kappa
from tide_bench.agreement.ratings import RatingsTable, load_judgments, load_raters, load_ratings

__all__ = [
    "AuditOptions",
    "RatingsTable",
    "alpha_with_ci",
    "krippendorff_alpha",
    "load_judgments",
    "load_raters",
    "load_ratings",
    "pair_metrics",
    "run_audit",
    "weighted_kappa",
]
