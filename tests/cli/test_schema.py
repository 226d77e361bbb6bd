from __future__ import annotations

import json

from click.testing import CliRunner

from argusdb.cli import main
from argusdb.schema import catalog


def test_schema_lists_public_objects_with_docs() -> None:
    r = CliRunner().invoke(main, ["schema", "--json"])
    assert r.exit_code == 0
    doc = json.loads(r.stdout)
    names = {o["name"] for o in doc["objects"]}
    assert {"evidence", "run", "program_version"} <= names
    assert not any(n.startswith("_") for n in names)
    assert all(o["description"] for o in doc["objects"] if o["kind"] != "macro")


def test_schema_of_one_table_shows_every_documented_column() -> None:
    r = CliRunner().invoke(main, ["schema", "evidence"])
    assert r.exit_code == 0
    for col in catalog.all_objects()["evidence"].columns:
        assert col in r.stdout
    assert "unit" in r.stdout


def test_schema_misspelt_name_suggests() -> None:
    r = CliRunner().invoke(main, ["schema", "evidense"])
    assert r.exit_code == 2 and "did you mean 'evidence'" in r.stderr


def test_the_listing_reads_without_the_catalogs_dependency_tags() -> None:
    from click.testing import CliRunner

    from argusdb.cli import main

    r = CliRunner().invoke(main, ["schema"])
    assert r.exit_code == 0
    assert "requires:" not in r.stdout
    assert "derivation_interval_of" in r.stdout
