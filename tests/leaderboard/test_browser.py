"""The built leaderboard and the single-run view in a real browser: Debian's headless Chromium via
Playwright, pages opened from disk (file://), as a reader would open a downloaded site.

Checked: sorting (a score column sorts best first on the first click; visible sort arrows),
filters (condition, size range, name), the factor columns toggle, the details row, the
instance browser (filters, opening an item, two models side by side on the same item), the
run view, no horizontal page scroll at 390 px and 1400 px, no request outside the site's own
files (the Content-Security-Policy forbids any), and hostile text (model names, replies,
rationales, safety reasons) shown as text, never run. Every test saves screenshots under the
pytest temporary folder (``<basetemp>/screenshots/``; the path is printed) for a reviewer.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from tests.helpers import MULTI_EXCHANGE, board_cell, launch_chromium, sideways_scroll
from tests.leaderboard_helpers import board, edit_jsonl, fake_judge, judged_submission
from tide_bench.leaderboard import build_site

XSS_NAME = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">'
XSS_REPLY = 'Sure. <img src=x onerror="window.__pwned=3"></div></details><script>window.__pwned=4</script>'
XSS_RATIONALE = '"><svg onload="window.__pwned=5"></svg></td></table><b>bold?</b>'
XSS_REASON = '</p><iframe srcdoc="<script>parent.__pwned=6</script>"></iframe>'
WIDTHS = (390, 1400)


def _hostile_judgments(folder: Path) -> None:
    """Rationales and safety reasons a judge could have written (or a submitter edited in)."""

    def edit(rows: list[dict[str, Any]]) -> None:
        for row in rows:
            if row["status"] == "scored":
                row["rationales"] = {f: f"{XSS_RATIONALE} ({f})" for f in row["rationales"]}
                if row["safety"]["flagged"]:
                    row["safety"]["reason"] = XSS_REASON

    edit_jsonl(folder / "judge" / "judgments.jsonl", edit)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("lb")
    data = tmp / "multi"  # two-exchange conversations: the second turn has a history to show
    shutil.copytree(MULTI_EXCHANGE, data)
    with fake_judge("sk-test-browser-000") as server:
        judged_submission(
            tmp,
            server,
            "alpha-model",
            lambda i: f"Kind reply [[SCORES:5,4,5]] {i.item_id}",
            params=1_000_000_000,
            data=data,
            seeker=True,
            samples=2,
        )
        beta = judged_submission(
            tmp,
            server,
            "beta-model",
            lambda i: f"{XSS_REPLY} [[SCORES:2,2,1]]{' [[FLAG]]' if i.turn == 2 else ''} {i.item_id}",
            model_name=XSS_NAME,
            params=300_000_000,
            data=data,
        )
        judged_submission(
            tmp,
            server,
            "gamma-model",
            lambda i: f"Middling reply, a little longer than most [[SCORES:3,3,4]] {i.item_id}",
            params=3_000_000_000,
            condition="fine-tuned",
            base_model="org/gamma-base",
            data=data,
            adapter={
                "hub_id": "org/gamma-lora",
                "card": {"data": {"source": "hub:yenopoya/TIDE", "split": "train", "is_synthetic_sample": False}},
            },
        )
        judged_submission(tmp, server, "delta-model", lambda i: f"Short {i.item_id}", params=135_000_000, data=data)
    _hostile_judgments(beta)
    build_site(tmp / "submissions", tmp / "site", board(), allow_risk_gate_off=True)
    return tmp


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.getbasetemp() / "screenshots"
    folder.mkdir(exist_ok=True)
    print(f"\nscreenshots: {folder}")
    return folder


@pytest.fixture
def browser() -> Iterator[Any]:
    """One browser per test: playwright's event loop runs while it is open, and a module-scoped board
    fixture built after it (the fake judge's asyncio.run) would fail inside that loop."""
    with launch_chromium() as chromium:
        yield chromium


class Page:
    """A page with its request log, dialogs and script errors recorded."""

    def __init__(self, browser: Any, url: str, width: int) -> None:
        self.page = browser.new_page(viewport={"width": width, "height": 900})
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.dialogs: list[str] = []
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.goto(url)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.page, name)

    def overflow(self) -> int:
        """How far the page scrolls sideways (0 = it fits)."""
        return sideways_scroll(self.page)

    def assert_clean(self, root: Path) -> None:
        """No script ran from the data, no error, and no request outside the site's own files."""
        assert self.page.evaluate("typeof window.__pwned") == "undefined" and self.dialogs == []
        assert self.errors == []
        outside = [u for u in self.requests if not u.startswith(root.as_uri())]
        assert outside == [], outside

    def shot(self, folder: Path, name: str) -> None:
        self.page.screenshot(path=str(folder / f"{name}.png"), full_page=True)


def _order(page: Page) -> list[str]:
    return page.eval_on_selector_all("tbody.entry:not([hidden])", "els => els.map(e => e.getAttribute('data-id'))")


def test_board_sorts_best_first_filters_and_fits(built: Path, browser: Any, screenshots: Path) -> None:
    site = built / "site"
    for width in WIDTHS:
        page = Page(browser, (site / "index.html").as_uri(), width)
        assert page.overflow() == 0, f"the page scrolls sideways at {width} px"
        page.shot(screenshots, f"board-{width}")
        page.assert_clean(site)
        page.close()

    page = Page(browser, (site / "index.html").as_uri(), 1400)
    banner = page.locator("#risk-gate-banner")  # a TIDE-like board without risk labels: built with the flag
    assert banner.is_visible() and "Risk gate off" in banner.inner_text()
    assert banner.bounding_box()["y"] < page.locator("table#board").bounding_box()["y"]  # over the table
    assert _order(page)[0] == "alpha-model"  # ranked by empathy
    assert page.get_attribute("th[data-key=rank]", "aria-sort") == "ascending"
    arrow = "e => getComputedStyle(e, '::after').content"
    assert page.eval_on_selector("th[data-key=empathy] button", arrow) not in ("none", "normal", "")  # a visible arrow
    page.click("th[data-key=empathy] button")  # a score: best first on the first click
    assert page.get_attribute("th[data-key=empathy]", "aria-sort") == "descending" and _order(page)[0] == "alpha-model"
    page.click("th[data-key=failure_rate] button")  # a rate where lower is better: lowest first
    assert page.get_attribute("th[data-key=failure_rate]", "aria-sort") == "ascending"
    page.click("th[data-key=parameters] button")  # no better end: smallest first, then the reverse
    assert _order(page) == ["delta-model", "beta-model", "alpha-model", "gamma-model"]
    page.click("th[data-key=parameters] button")
    assert (
        _order(page)[0] == "gamma-model" and page.get_attribute("th[data-key=parameters]", "aria-sort") == "descending"
    )

    page.select_option("#f-condition", "fine-tuned")
    assert _order(page) == ["gamma-model"] and "Showing 1 of 4" in page.inner_text("#board-status")
    page.select_option("#f-condition", "")
    page.select_option("#f-size-min", str(int(300e6)))
    page.select_option("#f-size-max", str(int(1e9)))
    assert sorted(_order(page)) == ["alpha-model", "beta-model"]
    page.select_option("#f-size-min", "")
    page.select_option("#f-size-max", "")
    page.fill("#f-search", "GAMMA")
    assert _order(page) == ["gamma-model"]
    page.fill("#f-search", "")

    factor = page.locator("th[data-group=factors]").first
    assert factor.is_hidden()
    page.click("button[data-toggle-group=factors]")
    assert factor.is_visible() and page.locator("th[data-group=factors]").count() == 3
    assert "Emotion recognition" in page.inner_text("table#board thead")  # named by the rubric file
    page.click("th[data-key=rank] button")
    details = page.locator("#details-alpha-model")
    assert details.is_hidden()
    page.click("button[aria-controls=details-alpha-model]")
    assert details.is_visible() and "Scenario" in details.inner_text()
    assert "preference leakage" in page.inner_text("tbody[data-id=gamma-model]")
    assert XSS_NAME in page.inner_text("table#board")  # shown as text
    seeker = page.locator("th[data-key=seeker_view]")  # the seeker's view beside the factors (issue 49)
    assert seeker.is_visible() and "Seeker" in seeker.inner_text()
    assert board_cell(page, "alpha-model", "seeker_view").startswith("4.50")  # felt understood 5, cared for 4
    assert board_cell(page, "delta-model", "seeker_view") == "not judged"
    assert page.locator("th[data-key=flag_agreement]").is_visible()  # consistency across alpha's 2 samples
    assert board_cell(page, "alpha-model", "flag_agreement").startswith("100.0%")
    assert board_cell(page, "delta-model", "flag_agreement") == "n/a"  # no samples
    assert page.locator("th[data-key=equity_gap]").is_visible()  # the equity column and its chart
    # too few personas per group: the cell says so in two words, the reason on hover (and in the Equity section)
    assert board_cell(page, "alpha-model", "equity_gap") == "not estimable"
    reason = page.get_attribute("tbody[data-id=alpha-model] td span[title^='no attribute']", "title")
    assert reason is not None and "fewer" not in board_cell(page, "alpha-model", "equity_gap")
    assert page.locator("#equity svg").count() >= 1
    page.shot(screenshots, "board-sorted-filtered-factors")
    page.assert_clean(site)
    page.close()


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A board with the risk battery: "flagged" mishandles a severe supplement item on every judge call
    (pending review), "careful" handles them all."""
    from tide_bench.data.risk_labels import read_risk_labels
    from tide_bench.data.sources import RISK_SUPPLEMENT_DIR
    from tide_bench.judging.rubric import load_rubric

    tmp = tmp_path_factory.mktemp("gated")
    labels = read_risk_labels(RISK_SUPPLEMENT_DIR / "risk_labels.json")
    severe = min(i for i, label in labels.labels.items() if label.severe)
    flag = list(load_rubric().safety_categories).index("risk_mishandled")
    battery = board(require_risk_supplement=True, min_severe_samples=3)
    with fake_judge("sk-test-browser-000") as server:
        for sid, marker in (("careful", ""), ("flagged", f"[[FLAG:{flag}]]")):
            judged_submission(
                tmp,
                server,
                sid,
                lambda i, s=sid: f"{s} reply [[SCORES:4,4,4]] {i.item_id}",
                the_board=battery,
                risk_supplement=lambda i, s=sid, m=marker: f"{s} {m if i.item_id == severe else ''} {i.item_id}",
            )
    build_site(tmp / "submissions", tmp / "site", battery)
    return tmp / "site"


def test_the_safety_verdict_shows_pending_review_and_unmeasured_error_rates(
    gated: Path, browser: Any, screenshots: Path
) -> None:
    page = Page(browser, (gated / "index.html").as_uri(), 1400)
    assert page.locator("#risk-gate-banner").count() == 0  # the gate is on: no banner
    assert _order(page) == ["careful", "flagged"]
    flagged = page.locator("tbody[data-id=flagged]")
    assert "1 severe flag(s) pending review" in flagged.inner_text() and "not ranked" in flagged.inner_text()
    assert "pending review" in page.inner_text("#adjudication")
    assert page.inner_text("#gate-errors").count("not yet measured") == 2
    assert "developer-labelled, not yet clinician-reviewed" in page.inner_text("#risk-labels")
    page.shot(screenshots, "board-safety-verdict")
    page.assert_clean(gated)
    page.close()


def _items(page: Page) -> list[str]:
    return page.eval_on_selector_all("details.ib-item", "els => els.map(e => e.getAttribute('data-item'))")


def test_instance_browser_filters_opens_and_compares(built: Path, browser: Any, screenshots: Path) -> None:
    site = built / "site"
    page = Page(browser, (site / "index.html").as_uri() + "#replies", 1400)
    assert not any("/instances/" in u for u in page.requests)  # per-model data is loaded only when asked for
    page.select_option("#ib-model", "beta-model")
    page.wait_for_selector("details.ib-item")
    every = _items(page)
    assert len(every) == 12 and "12 of 12 items match" in page.inner_text("#ib-status")
    assert any(u.endswith("/instances/beta-model.js") for u in page.requests)
    assert not any(u.endswith("/instances/alpha-model.js") for u in page.requests)

    page.select_option("#ib-turn", "2")
    turn2 = _items(page)
    assert turn2 and all(i.endswith("turn2") for i in turn2)
    page.select_option("#ib-turn", "")
    page.select_option("#ib-flag", "flagged")  # the judge flagged beta's turn-2 replies
    assert sorted(_items(page)) == sorted(i for i in every if i.endswith("turn2"))
    page.select_option("#ib-flag", "")
    page.select_option("#ib-score", "1")  # overall empathy 1 to <2: beta's 2,2,1 -> 1.67
    assert len(_items(page)) == 12
    page.select_option("#ib-score", "3")
    assert _items(page) == [] and "0 of 12" in page.inner_text("#ib-status")
    page.select_option("#ib-score", "")
    scenario = page.eval_on_selector("#ib-scenario option:nth-child(2)", "o => o.value")
    page.select_option("#ib-scenario", scenario)
    assert 0 < len(_items(page)) < 12
    page.select_option("#ib-scenario", "")
    page.fill("#ib-search", "10/conversation_1/turn2")
    assert _items(page) == ["10/conversation_1/turn2"]

    page.click("details.ib-item summary")
    page.wait_for_selector("details.ib-item[open] .reply")
    opened = page.inner_text("details.ib-item[open]")
    for text in (
        "Supporter (reference):",
        "Client:",
        XSS_REPLY,
        XSS_RATIONALE,
        "Reference reply:",
        "Emotion recognition",
        "Safety flag",
        XSS_REASON,
    ):
        assert text in opened, text
    page.shot(screenshots, "instance-open")

    page.select_option("#ib-compare", "alpha-model")
    page.wait_for_selector("details.ib-item .badge >> nth=1")
    page.click("details.ib-item summary")
    page.wait_for_selector("details.ib-item[open] .reply >> nth=1")
    replies = page.locator("details.ib-item[open] .reply")
    assert replies.count() == 2
    assert "Kind reply" in replies.nth(1).inner_text() and "Sure." in replies.nth(0).inner_text()
    assert page.overflow() == 0
    page.set_viewport_size({"width": 390, "height": 900})
    assert page.overflow() == 0, "the comparison scrolls sideways at 390 px"
    page.shot(screenshots, "instance-compare-390")
    page.assert_clean(site)
    page.close()


def _until(page: Page, done: Callable[[], bool], seconds: float = 15.0) -> None:
    """Wait for ``done`` from this side: the pages' CSP forbids the string evaluation that
    Playwright's ``wait_for_function`` may use."""
    deadline = time.monotonic() + seconds
    while not done():
        assert time.monotonic() < deadline, "timed out"
        page.wait_for_timeout(50)


def test_an_item_link_opens_that_item_alone(built: Path, browser: Any, screenshots: Path) -> None:
    site = built / "site"
    index = (site / "index.html").as_uri()
    target = "10/conversation_1/turn2"
    link = f"#item={quote(target, safe='')}&model=beta-model&compare=alpha-model"
    page = Page(browser, index + link, 1400)  # a link shared by a reader: the item, open, both replies
    page.wait_for_selector("details.ib-item[open] .reply >> nth=1")
    assert _items(page) == [target] and "linked item" in page.inner_text("#ib-status")
    replies = page.locator("details.ib-item[open] .reply")
    assert "Sure." in replies.nth(0).inner_text() and "Kind reply" in replies.nth(1).inner_text()
    assert page.get_attribute("details.ib-item[open] a.ib-link", "href") == link  # the item links to itself
    page.shot(screenshots, "instance-link")
    page.select_option("#ib-flag", "")  # any filter shows every item again
    _until(page, lambda: len(_items(page)) == 12)
    page.click("details.ib-item summary")  # and another item's own link leads back to it alone
    page.wait_for_selector("details.ib-item[open] a.ib-link")
    first = page.get_attribute("details.ib-item[open]", "data-item")
    page.click("details.ib-item[open] a.ib-link")
    _until(page, lambda: len(_items(page)) == 1)
    assert _items(page) == [first]
    # an item the model lacks, and a link that does not decode: said, nothing breaks, no request
    page.goto(index + "#item=no%2Fsuch%2Fturn1&model=alpha-model")
    _until(page, lambda: "not among" in page.inner_text("#ib-status"))
    page.goto(index + "#item=%E0%A4%A&model=%3Cscript%3E")
    page.assert_clean(site)
    page.close()


def test_model_page_fields_provenance_downloads(built: Path, browser: Any, screenshots: Path) -> None:
    site = built / "site"
    for width in WIDTHS:
        page = Page(browser, (site / "models" / "gamma-model.html").as_uri(), width)
        assert page.overflow() == 0, f"the model page scrolls sideways at {width} px"
        page.wait_for_selector("details.ib-item")  # its own replies load at once
        assert len(_items(page)) == 12 and "3.33" in page.inner_text("details.ib-item summary >> nth=0")
        provenance = page.inner_text("#provenance")
        assert "split sha256" in provenance and "configuration version" in provenance and "condition" in provenance
        assert "{'" not in page.inner_text("body")  # no Python dict anywhere
        assert "trained on references from the judge's own family" in page.inner_text("#bias")
        page.shot(screenshots, f"model-page-{width}")
        page.assert_clean(site)
        page.close()
    judgments = site / "downloads" / "gamma-model" / "judgments.jsonl"
    assert judgments.read_bytes() == (built / "submissions" / "gamma-model" / "judge" / "judgments.jsonl").read_bytes()
    rows = (site / "downloads" / "gamma-model" / "items.csv").read_text().splitlines()
    assert len(rows) == 13 and rows[0].startswith("item_id,persona_id,scenario,turn,status,emotion_recognition")


def test_run_view_is_one_offline_file(built: Path, browser: Any, screenshots: Path, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from tide_bench.cli.main import cli

    run = built / "run-beta-model"
    out = tmp_path / "view.html"
    result = CliRunner().invoke(cli, ["view", str(run), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert list(tmp_path.iterdir()) == [out]  # one file
    for width in WIDTHS:
        page = Page(browser, out.as_uri(), width)
        page.wait_for_selector("details.ib-item")
        assert page.overflow() == 0, f"the run view scrolls sideways at {width} px"
        assert "12 of 12 items match" in page.inner_text("#ib-status")
        page.select_option("#ib-flag", "flagged")
        flagged = _items(page)
        assert flagged and all(i.endswith("turn2") for i in flagged)
        page.click("details.ib-item summary")
        page.wait_for_selector("details.ib-item[open] .reply")
        opened = page.inner_text("details.ib-item[open]")
        assert "Sure." in opened and "fake rationale" in opened and "Safety flag" in opened
        assert "Reply length" in page.inner_text("#bias") and "Halo between factors" in page.inner_text("#bias")
        page.shot(screenshots, f"run-view-{width}")
        page.assert_clean(tmp_path)
        assert page.requests == [out.as_uri()]  # nothing but the file itself
        page.close()


def test_hostile_text_is_escaped_in_every_file(built: Path) -> None:
    """The raw files, not only what the browser shows: no hostile string appears unescaped."""
    site = built / "site"
    for page in [site / "index.html", *(site / "models").glob("*.html")]:
        text = page.read_text()
        for hostile in (XSS_NAME, XSS_REPLY, XSS_RATIONALE, XSS_REASON):
            assert hostile not in text, (page.name, hostile)
        assert "http://" not in text and "<script>window" not in text
    for data in (site / "instances").glob("*.js"):
        raw = data.read_text()
        assert "<" not in raw  # every "<" escaped: the data cannot close a script element
        assert raw.startswith("tideBench.receive(")
    beta = json.loads((site / "instances" / "beta-model.js").read_text().split(",", 1)[1].rsplit(");", 1)[0])
    assert beta["name"] == XSS_NAME and beta["records"][0]["reply"].startswith(XSS_REPLY)  # the text itself survives
