"""The shared checks of argusdb/collectors/validate.py, case by case."""

from __future__ import annotations

from decimal import Decimal

import pytest

from argusdb import demo
from argusdb.collectors.validate import (
    MAX_INTERVAL_NS,
    Braces,
    Unique,
    check_options,
    int_field,
    interval,
    known_target,
    measurement,
    us_to_ns,
)
from argusdb.errors import InputError, UsageError


@pytest.mark.parametrize(("value", "target"), [
    ("cuda:90", "sm_90"), ("sm_90a", "sm_90"), ("9.0", "sm_90"), ("90", "sm_90"),
    ("sm_100f", "sm_100"), ("compute_80", "sm_80"), ("12.1", "sm_121"), (None, None), ("", None),
])
def test_known_targets_normalize(value: str | None, target: str | None) -> None:
    assert known_target("a", value) == target


@pytest.mark.parametrize("value", ["sm_9999", "cuda:'; DROP TABLE run; --", "9.9", "hip:gfx942",
                                   "sm_91", "x"])
def test_unknown_targets_are_refused(value: str) -> None:
    with pytest.raises(InputError, match="not a known CUDA target"):
        known_target("a.ttgir", value)


def test_real_options_pass_unchanged() -> None:
    opts = {**demo.OPTIONS, "num_warps": "8", "num_stages": 1, "BLOCK_M": "128",
            "dtype": "float16", "driver": "580.95.05", "shape": "(4096,4096)"}
    assert check_options(opts) == opts


@pytest.mark.parametrize("opts", [{"target": "sm_90; DROP TABLE run"}, {"num_warps": "-4"},
                                  {"num_stages": "1.5"}, {"x": "a'b"}, {"x y": "1"},
                                  {"x": ""}, {"x": "a" * 200}])
def test_bad_options_are_usage_errors(opts: dict[str, str]) -> None:
    with pytest.raises(UsageError, match="--option"):
        check_options(opts)


def test_numbers() -> None:
    assert int_field("f", "w", "n", Decimal("16384.0")) == 16384
    assert int_field("f", "w", "n", None) is None
    for bad in ("16", True, 1.5, float("nan"), 1 << 64, -1):
        with pytest.raises(InputError):
            int_field("f", "w", "n", bad)
    assert us_to_ns("f", "w", "ts", Decimal("2413669097444.592")) == 2413669097444592
    assert us_to_ns("f", "w", "ts", -1) == -1000  # a ts may precede the trace's base time
    with pytest.raises(InputError, match="cannot be negative"):
        us_to_ns("f", "w", "dur", -1, lo=0)
    with pytest.raises(InputError, match="not a number"):
        us_to_ns("f", "w", "ts", "12")
    assert interval("f", "w", 5, 5) == 0
    with pytest.raises(InputError, match="ends before it starts"):
        interval("f", "w", 5, 4)
    with pytest.raises(InputError, match="7 days"):
        interval("f", "w", 0, MAX_INTERVAL_NS + 1)
    assert measurement("f", "w", "m", Decimal("2.5")) == 2.5
    assert measurement("f", "w", "m", -2, signed=True) == -2
    for worse in (-1, "1", Decimal("1e400"), True):
        with pytest.raises(InputError):
            measurement("f", "w", "m", worse)


def test_unique_names_the_first_repeat() -> None:
    u = Unique("k.jsonl", "record", lambda n: f"line {n}")
    for n, key in enumerate(["a", "b", "c", "b", "a"], start=1):
        u.add(key, n)
    with pytest.raises(InputError, match="line 4: this record repeats line 2"):
        u.check()
    ok = Unique("k.jsonl", "record", lambda n: f"line {n}")
    for n in range(1000):
        ok.add(("k", n), n)
    ok.check()


def test_braces_ignore_strings_and_comments() -> None:
    b = Braces("x.ptx", "fix")
    for no, line in enumerate(['.file 1 "a{b"', "{", "  mov.u32 %r1, 0; // }", "}"], start=1):
        b.line(no, line)
    b.end("a block")
    open_ = Braces("x.ptx", "fix")
    open_.line(1, "{")
    with pytest.raises(InputError, match="line 1 is never closed"):
        open_.end("a block")
    extra = Braces("x.ptx", "fix")
    extra.line(3, "}")
    with pytest.raises(InputError, match="line 3 closes"):
        extra.end("a block")
