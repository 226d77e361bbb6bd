"""docs/api.md is the API reference generated from the current docstrings."""

from __future__ import annotations

import pytest

pytest.importorskip("pdoc", reason="pdoc comes with the test extra")


def test_api_reference_is_current() -> None:
    from tools import api_docs

    assert api_docs.OUT.read_text(encoding="utf-8") == api_docs.render(), (
        "docs/api.md is stale: run python -m tools.api_docs")


def test_api_reference_covers_the_public_api() -> None:
    from tools import api_docs

    page = api_docs.OUT.read_text(encoding="utf-8")
    for name in ("connect", "Connection", "Connection.query", "Connection.df", "report",
                 "diff", "trajectory", "observe", "perfetto_trace", "QueryRefused"):
        assert f"`{name}`" in page
