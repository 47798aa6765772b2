"""The built leaderboard in a real browser: headless Chromium (Debian's package) via Playwright,
opened from disk. Sorting, expanding details, and no script injection through a model name."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.fakes.llm_server import FakeLLMServer
from tests.test_leaderboard import XSS_NAME, board, judged_submission
from tide_bench.leaderboard import build_site

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
REQUIRED = os.environ.get("TIDE_BENCH_REQUIRE_BROWSER") == "1"  # set by .ci/run: never skip there
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def _playwright():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        if REQUIRED:
            raise
        pytest.skip("playwright not installed")
    if not Path(CHROMIUM).exists():
        if REQUIRED:
            pytest.fail(f"chromium not found at {CHROMIUM}")
        pytest.skip("chromium not installed (apt-get install chromium)")
    return sync_playwright


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("lb")
    server = FakeLLMServer().start()
    os.environ.setdefault("ANTHROPIC_API_KEY", "sk-test-browser-000")
    try:
        judged_submission(tmp, server, "alpha-model", lambda i: f"Kind reply [[SCORES:5,4,5]] {i.item_id}", params=1_000_000_000)
        judged_submission(tmp, server, "beta-model", lambda i: f"Flat reply [[SCORES:2,2,1]] {i.item_id}", model_name=XSS_NAME, params=300_000_000)
        judged_submission(tmp, server, "gamma-model", lambda i: f"Middling reply [[SCORES:3,3,3]] {i.item_id}", params=3_000_000_000)
    finally:
        server.stop()
    build_site(tmp / "submissions", tmp / "site", board())
    return tmp / "site"


def test_sort_expand_and_no_injection(site: Path) -> None:
    sync_playwright = _playwright()
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page()
        requests: list[str] = []
        page.on("request", lambda r: requests.append(r.url))
        dialogs: list[str] = []
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        page.goto((site / "index.html").as_uri())

        def order() -> list[str]:
            return page.eval_on_selector_all("tbody.entry", "els => els.map(e => e.getAttribute('data-model'))")

        initial = order()
        assert initial[0] == "Model alpha-model"  # ranked by empathy
        page.click("th[data-key=size]")
        by_size = order()
        assert by_size != initial and by_size[0] == XSS_NAME  # smallest first
        page.click("th[data-key=size]")
        assert order()[0] == "Model gamma-model"  # then descending
        assert page.get_attribute("th[data-key=size]", "aria-sort") == "descending"

        details = page.locator("#details-alpha-model")
        assert details.is_hidden()
        page.click("button[aria-controls=details-alpha-model]")
        assert details.is_visible()
        assert "Scenario" in details.inner_text()

        assert page.evaluate("typeof window.__pwned") == "undefined" and dialogs == []
        assert XSS_NAME in page.inner_text("table#board")  # shown as text
        assert all(u.startswith("file://") for u in requests)  # nothing fetched from the network

        page.click("text=Model alpha-model")
        assert "Sample dialogues" in page.inner_text("body")
        browser.close()
