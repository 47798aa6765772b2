"""Agreement statistics against worked examples, the reference libraries, and bad input."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from click.testing import CliRunner
from scipy import stats

from tide_bench.agreement import AuditOptions, run_audit, weighted_kappa
from tide_bench.agreement.alpha import alpha_from_coincidences, alpha_with_ci, krippendorff_alpha, unit_coincidences
from tide_bench.agreement.groups import holm
from tide_bench.agreement.pairwise import pair_metrics, qwk_bootstrap
from tide_bench.cli.main import cli
from tide_bench.core.errors import DataError

NAN = np.nan
# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability": 4 observers, 12 units, missing data.
KRIPPENDORFF_2011 = np.array([
    [1, 2, 3, 3, 2, 1, 4, 1, 2, NAN, NAN, NAN],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, NAN, 3],
    [NAN, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, NAN],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, NAN],
])
DOMAIN = [1, 2, 3, 4, 5]


@pytest.mark.parametrize(("level", "published"), [("ordinal", 0.815), ("interval", 0.849)])
def test_krippendorffs_worked_example(level: str, published: float) -> None:
    assert krippendorff_alpha(KRIPPENDORFF_2011, level, DOMAIN) == pytest.approx(published, abs=5e-4)
    ours = alpha_from_coincidences(unit_coincidences(KRIPPENDORFF_2011, DOMAIN).sum(axis=0)[None], level, DOMAIN)[0]
    assert ours == pytest.approx(published, abs=5e-4)


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("level", ["ordinal", "interval"])
def test_vectorised_alpha_matches_the_package_on_random_data_with_missing(seed: int, level: str) -> None:
    rng = np.random.default_rng(seed)
    data = rng.integers(1, 6, size=(4, 80)).astype(float)
    data[rng.random(data.shape) < 0.35] = np.nan
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level, value_domain=DOMAIN)
    ours = alpha_from_coincidences(unit_coincidences(data, DOMAIN).sum(axis=0)[None], level, DOMAIN)[0]
    assert ours == pytest.approx(expected, abs=1e-10)


def test_bootstrap_ci_brackets_the_estimate_and_is_seeded() -> None:
    rng = np.random.default_rng(3)
    truth = rng.integers(1, 6, 200)
    data = np.clip(truth[None, :] + rng.integers(-1, 2, size=(4, 200)), 1, 5).astype(float)
    a = alpha_with_ci(data, "interval", DOMAIN, resamples=500, seed=1)
    assert a["ci_low"] < a["value"] < a["ci_high"] and a["n_units"] == 200
    assert alpha_with_ci(data, "interval", DOMAIN, resamples=500, seed=1) == a


def test_constant_ratings_give_null_alpha_with_a_reason() -> None:
    data = np.full((3, 10), 4.0)
    a = alpha_with_ci(data, "ordinal", DOMAIN, resamples=50)
    assert a["value"] is None and "no variation" in a["note"]
    single = alpha_with_ci(np.array([[1.0, 2.0, NAN], [NAN, NAN, 3.0]]), "interval", DOMAIN, resamples=50)
    assert single["value"] is None and "two or more raters" in single["note"]


def test_weighted_kappa_by_hand() -> None:
    a, b = np.array([1, 1, 2, 3]), np.array([1, 2, 2, 2])
    # Worked by hand: quadratic 1 - 0.125/0.21875 = 3/7; linear 1 - 0.25/0.375 = 1/3.
    assert weighted_kappa(a, b, "quadratic", [1, 2, 3]) == pytest.approx(3 / 7)
    assert weighted_kappa(a, b, "linear", [1, 2, 3]) == pytest.approx(1 / 3)
    assert weighted_kappa(a, b, "quadratic", DOMAIN) == pytest.approx(3 / 7)  # unused categories change nothing
    assert weighted_kappa(a, a, "linear", DOMAIN) == pytest.approx(1.0)


def test_kappa_and_spearman_match_reference_libraries() -> None:
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(7)
    a = rng.integers(1, 6, 300)
    b = np.clip(a + rng.integers(-2, 3, 300), 1, 5)
    for w in ("linear", "quadratic"):
        assert weighted_kappa(a, b, w, DOMAIN) == pytest.approx(cohen_kappa_score(a, b, weights=w))
    assert qwk_bootstrap(a.astype(float), b.astype(float), np.ones((1, 300)))[0] == pytest.approx(cohen_kappa_score(a, b, weights="quadratic"))
    with_missing = np.where(rng.random(300) < 0.2, np.nan, a)
    m = pair_metrics(with_missing, b.astype(float), DOMAIN)
    assert m["n"] == int((~np.isnan(with_missing)).sum()) and 0 < m["exact_agreement"] < 1
    rho = stats.spearmanr(a, b).statistic
    assert pair_metrics(a.astype(float), b.astype(float), DOMAIN)["spearman"] == pytest.approx(rho)
    lo, hi = pair_metrics(a.astype(float), b.astype(float), DOMAIN)["spearman_ci"]
    assert lo < rho < hi


def test_holm_by_hand() -> None:
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert holm([0.5]) == [0.5]


def _write(path: Path, header: list[str], rows: list[list]) -> Path:
    with path.open("w", newline="") as handle:
        w = csv.writer(handle)
        w.writerow(header)
        w.writerows(rows)
    return path


def _synthetic(tmp_path: Path, n: int = 120, judge_noise: int = 1) -> tuple[Path, Path, Path]:
    rng = np.random.default_rng(11)
    truth = rng.integers(1, 6, size=n)
    rows = []
    for i in range(n):
        for r in range(4):
            if rng.random() < 0.8:
                bias = 1 if r < 2 and rng.random() < 0.5 else 0  # raters 0-1 (older) rate a bit higher
                rows.append([f"i{i}", f"h{r}", "validation", int(np.clip(truth[i] + bias + rng.integers(-1, 2), 1, 5))])
    ratings = _write(tmp_path / "ratings.csv", ["item_id", "rater_id", "dimension", "score"], rows)
    raters = _write(tmp_path / "raters.csv", ["rater_id", "age_group", "gender", "note"],
                    [[f"h{r}", "55+" if r < 2 else "18-34", ["f", "m"][r % 2], f"free text {r}"] for r in range(4)])
    judgments = tmp_path / "judgments.jsonl"
    with judgments.open("w") as handle:
        for i in range(n):
            if i % 40 == 0:
                handle.write(json.dumps({"item_id": f"i{i}", "status": "unscored", "unscored_kind": "refusal", "judge": {"name": "j", "version": "v" * 16}}) + "\n")
                continue
            score = int(np.clip(truth[i] + rng.integers(-judge_noise, judge_noise + 1), 1, 5))
            handle.write(json.dumps({"item_id": f"i{i}", "status": "scored", "scores": {"distress_normalization": score}, "judge": {"name": "j", "version": "v" * 16}}) + "\n")
    return ratings, raters, judgments


def test_audit_end_to_end_schema(tmp_path: Path) -> None:
    ratings, raters, judgments = _synthetic(tmp_path)
    result = CliRunner().invoke(cli, ["audit", "--ratings", str(ratings), "--raters", str(raters), "--judgments", str(judgments),
                                      "--map", "validation=distress_normalization", "--resamples", "300", "--out", str(tmp_path / "audit")])
    assert result.exit_code == 0, result.output
    out = json.loads((tmp_path / "audit" / "agreement.json").read_text())
    d = out["dimensions"]["distress_normalization"]
    assert d["n_items"] == 120 and d["raters"] == ["h0", "h1", "h2", "h3"]
    for level in ("ordinal", "interval"):
        assert set(d["alpha"][level]) >= {"value", "ci_low", "ci_high"} and d["alpha"][level]["ci_low"] < d["alpha"][level]["value"]
    assert len(d["pairs"]) == 6
    assert set(d["pairs"][0]) >= {"rater_a", "rater_b", "n", "kappa_quadratic", "kappa_linear", "spearman", "spearman_p", "spearman_ci", "exact_agreement", "mae"}
    j = d["judges"]["judge:j@vvvvvvvv"]
    assert j["n_unscored"] == 3 and j["unscored_reasons"] == {"refusal": 3}
    assert j["vs_consensus"]["n"] == 117 and len(j["vs_humans"]) == 4
    assert j["alpha_with_judge"]["interval"]["value"] is not None
    ratio = j["leave_one_out"]["ratio"]
    assert ratio["ci_low"] <= ratio["value"] <= ratio["ci_high"]
    assert j["verdict"].split(":")[0] in ("yes", "close", "no", "undecided")
    groups = out["rater_groups"]["columns"]["age_group"]["distress_normalization"]
    assert groups["test"]["name"] == "mann-whitney-u" and "p_holm" in groups["test"]
    assert groups["groups"]["55+"]["mean"] > groups["groups"]["18-34"]["mean"]
    assert "judge:j@vvvvvvvv" in groups["judge_agreement"]
    assert "note" in out["rater_groups"]["skipped_columns"]  # free text is not a grouping
    assert (tmp_path / "audit" / "agreement.png").stat().st_size > 1000
    md = (tmp_path / "audit" / "agreement.md").read_text()
    assert "## distress_normalization" in md and "Rater groups" in md


def test_better_judge_gets_a_higher_ratio(tmp_path: Path) -> None:
    def ratio(noise: int) -> float:
        folder = tmp_path / f"noise{noise}"
        folder.mkdir()
        ratings, _, judgments = _synthetic(folder, judge_noise=noise)
        options = AuditOptions(resamples=200, plot=False, mapping={"validation": "distress_normalization"})
        out = run_audit(ratings, folder / "o", judgments=[judgments], options=options)
        return out["dimensions"]["distress_normalization"]["judges"]["judge:j@vvvvvvvv"]["leave_one_out"]["ratio"]["value"]

    assert ratio(0) > ratio(2)


def test_single_rater_says_so(tmp_path: Path) -> None:
    ratings = _write(tmp_path / "r.csv", ["item_id", "rater_id", "dimension", "score"], [[f"i{i}", "only", "d", 1 + i % 5] for i in range(10)])
    out = run_audit(ratings, tmp_path / "o", options=AuditOptions(resamples=50, plot=False))
    d = out["dimensions"]["d"]
    assert d["pairs"] == [] and d["alpha"]["interval"]["value"] is None
    assert "fewer than two human raters" in d["notes"][0]


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (["i1", "r1", "d", "high"], r"r\.csv:3.*field 'score'.*not a number"),
        (["i1", "r1", "d", "7"], r"r\.csv:3.*outside the scale 1\.\.5"),
        (["i0", "r1", "d", "2"], r"r\.csv:3.*duplicate rating of item 'i0' by rater 'r1'"),
        (["", "r1", "d", "2"], r"r\.csv:3.*missing 'item_id'"),
    ],
)
def test_bad_ratings_are_refused_with_file_and_line(tmp_path: Path, row: list, message: str) -> None:
    ratings = _write(tmp_path / "r.csv", ["item_id", "rater_id", "dimension", "score"], [["i0", "r1", "d", "3"], row])
    with pytest.raises(DataError, match=message):
        run_audit(ratings, tmp_path / "o", options=AuditOptions(resamples=10, plot=False))


def test_jsonl_ratings_and_bad_judgments(tmp_path: Path) -> None:
    ratings = tmp_path / "r.jsonl"
    ratings.write_text("\n".join(json.dumps({"item_id": f"i{i}", "rater_id": f"r{r}", "dimension": "d", "score": 1 + (i + r) % 5}) for i in range(6) for r in range(2)) + "\n")
    assert run_audit(ratings, tmp_path / "o", options=AuditOptions(resamples=20, plot=False))["dimensions"]["d"]["n_items"] == 6
    bad = tmp_path / "j.jsonl"
    bad.write_text('{"item_id": "i0", "status": "scored"}\n')
    with pytest.raises(DataError, match=r"j\.jsonl:1.*not a tide-bench judgment"):
        run_audit(ratings, tmp_path / "o", judgments=[bad], options=AuditOptions(resamples=20, plot=False))
