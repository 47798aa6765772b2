"""Agreement: can a judge stand in for human raters, on which factor, and for whom?

Imports :mod:`tide_bench.core` and, for a run folder's name, :mod:`tide_bench.generation`
(judge outputs are read as plain files). Works on any ratings table, human or machine. Public API::

    from tide_bench.agreement import run_audit
    report = run_audit(ratings="human_ratings.csv", raters="raters.csv",
                       judgments=["runs/x/judge/judgments.jsonl"], out="audit/")
"""

from tide_bench.agreement.alpha import alpha_with_ci, krippendorff_alpha
from tide_bench.agreement.alt_test import alt_test
from tide_bench.agreement.audit import AuditOptions, run_audit, verdict
from tide_bench.agreement.groups import analyze_groups, permutation_test
from tide_bench.agreement.pairwise import pair_metrics, weighted_kappa
from tide_bench.agreement.ratings import Rating, RatingsTable, Scale, load_judgments, load_raters, load_ratings

__all__ = [
    "AuditOptions",
    "Rating",
    "RatingsTable",
    "Scale",
    "alpha_with_ci",
    "alt_test",
    "analyze_groups",
    "krippendorff_alpha",
    "load_judgments",
    "load_raters",
    "load_ratings",
    "pair_metrics",
    "permutation_test",
    "run_audit",
    "verdict",
    "weighted_kappa",
]
