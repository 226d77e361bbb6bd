"""Regenerate ``argusdb/checker/functions.csv`` from the installed DuckDB's function list.

    python -m tools.functions_csv > argusdb/checker/functions.csv

The checker classifies every function DuckDB lists (:func:`argusdb.checker.functions.generate`);
``tests/checker/test_battery.py`` fails when the shipped file differs from what this prints.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from argusdb.checker.functions import generate
from argusdb.store import open_store


def engine_functions() -> list[tuple[str, str]]:
    """``(function_name, function_type)`` of every function the installed DuckDB lists."""
    with tempfile.TemporaryDirectory() as d, open_store(Path(d) / "f.duckdb",
                                                        create=True) as st:
        return [(r["function_name"], r["function_type"]) for r in st.rows(
            "SELECT DISTINCT function_name, function_type FROM duckdb_functions() "
            "WHERE internal")]


if __name__ == "__main__":
    sys.stdout.write(generate(engine_functions()))
