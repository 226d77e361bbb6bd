"""Every rule is documented as sqlfluff documents its rules, and has its YAML cases."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from argusdb.checker.rules import PHASES, Rule, all_rules, rule

RULES = Path(__file__).parent / "rules"


def test_codes_are_unique_stable_and_dotted() -> None:
    rules = all_rules()
    assert [r.code for r in rules] == [f"AR{i:02d}" for i in range(1, 16)]
    assert all(re.fullmatch(r"[a-z]+\.[a-z_]+", r.name) for r in rules)
    assert all(r.phase in PHASES for r in rules)
    assert rule("AR04").name == "class.mix"


@pytest.mark.parametrize("r", all_rules(), ids=lambda r: r.code)
def test_rule_has_docstring_with_anti_pattern_and_best_practice(r: Rule) -> None:
    doc = type(r).__doc__ or ""
    assert "Anti-pattern::" in doc and "Best practice::" in doc, r.code
    assert type(r).__module__.split(".")[-1].startswith(r.code.lower())


@pytest.mark.parametrize("r", all_rules(), ids=lambda r: r.code)
def test_rule_has_its_yaml_file(r: Rule) -> None:
    doc = yaml.safe_load((RULES / f"{r.code}.yaml").read_text())
    assert doc["rule"] == r.code
