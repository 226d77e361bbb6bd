"""Every SQL example of the README and docs/ is sound on a multi-version store: accepted and
run on the store of every demo recording with softmax under two program versions."""

from __future__ import annotations

import re
from pathlib import Path

from argusdb import demo
from argusdb.api import checked
from argusdb.store.embedded import Store

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _examples() -> list[str]:
    text = "\n".join(p.read_text() for p in PAGES)
    out = [m.strip() for m in re.findall(r"```sql\n(.*?)```", text, re.S)]
    for call in re.findall(r'db\.query\(((?:"[^"]*"\s*)+)\)', text):
        out.append("".join(re.findall(r'"([^"]*)"', call)))
    return out


def test_readme_and_demo_queries_are_sound_on_a_multi_version_store(full_store: Store) -> None:
    examples = [*_examples(), demo.QUESTION, demo.REGION_BREAKDOWN]
    assert len(examples) >= 5
    for sql in examples:
        assert checked.check(sql, full_store) == [], sql
        checked.execute(sql, full_store)


def test_the_old_demo_breakdown_is_refused(full_store: Store) -> None:
    old = demo.REGION_BREAKDOWN.replace("PARTITION BY kernel, program_version",
                                        "PARTITION BY kernel")
    assert [f.code for f in checked.check(old, full_store)] == ["AR01"]
