"""Page assets (CSS, JavaScript) kept as files beside the code that uses them, inlined at build time.

Why files: a stylesheet or a script written inside a Python string cannot be linted, diffed or
read as what it is. Why inlined: every page tide-bench writes is one self-contained file that
works offline under a Content-Security-Policy without a network fetch, so the text is copied
into the page, never linked. :func:`script` refuses a script that could end its own
``<script>`` element early.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources


@lru_cache(maxsize=32)
def asset_text(package: str, name: str) -> str:
    """The text of ``assets/<name>`` inside ``package`` (e.g. ``tide_bench.leaderboard``)."""
    return (resources.files(package) / "assets" / name).read_text(encoding="utf-8")


def script(text: str) -> str:
    """``text`` as an inline ``<script>`` element; a script holding ``</script`` is refused (it would
    end the element early)."""
    if "</script" in text.lower():
        raise ValueError("an inline script must not contain '</script'")
    return f"<script>{text}</script>"


def style(text: str) -> str:
    """``text`` as an inline ``<style>`` element."""
    if "</style" in text.lower():
        raise ValueError("an inline stylesheet must not contain '</style'")
    return f"<style>{text}</style>"
