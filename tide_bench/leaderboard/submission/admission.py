"""The admission rule: how many items may be unscored for reasons that are not the model's.

A submission check (``validate`` refuses the entry), kept apart from scoring so that the
numbers never decide whether an entry may join: the rule reads four counts a row also carries.
"""

from __future__ import annotations

from typing import Any


def admission_errors(row: dict[str, Any], *, max_infrastructure_unscored: float) -> list[str]:
    """Why a scored entry cannot join the board: too many items unscored for reasons that are
    not the model's. The content-independent ones are left out of the means and could hide its
    weak items; the ones that depend on the reply count at the scale minimum (they cannot help
    it), but that many of them says the judge run is unhealthy (a wrong endpoint, a judge that
    cannot produce the schema): re-judge first, rather than publish scores of 1."""
    rate = row.get("infrastructure_unscored_rate")
    if rate is None or rate <= max_infrastructure_unscored:
        return []
    kinds = ", ".join(f"{k}: {v}" for k, v in sorted(row["unscored_reasons"].items()))
    return [
        f"{row['n_infrastructure_unscored']} of {row['n_items']} items ({100 * rate:.1f}%) "
        "are unscored for infrastructure "
        f"reasons ({kinds}), above this board's limit of {100 * max_infrastructure_unscored:.1f}%: re-judge them with "
        "`tide-bench judge RUN --out RUN/judge --retry-unscored` and submit again"
    ]
