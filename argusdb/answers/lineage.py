"""What an answer reads of an evidence row's lineage (its JSON provenance), without parsing
the rest.

An attributed row's lineage lists its source evidence IDs: kilobytes of numbers per row, which
a diff of 56 signals over 400 source-page runs would parse 22,400 times (a second of CPU) to
read three keys. :func:`lineage_keys` parses only those where the object is flat.

Example:
    >>> lineage_keys('{"run_id":"r1","mapping_run_ids":["m1"],"source_evidence_ids":[1,2]}')
    {'mapping_run_ids': ['m1']}
    >>> lineage_keys('{"conditions": {"variant": "v"}, "parent_run_id": "p"}')
    {'conditions': {'variant': 'v'}, 'parent_run_id': 'p'}
"""

from __future__ import annotations

import json
from typing import Any

#: The lineage keys a cohort reads (:func:`argusdb.answers.select._add_lineage`).
KEYS = ("conditions", "mapping_run_ids", "parent_run_id")


def lineage_keys(text: str) -> dict[str, Any]:
    """The values of :data:`KEYS` in the lineage JSON object ``text`` (absent keys left
    out), or the whole object parsed where it is not flat and compact.

    The short path is taken for a flat object (one ``{``: no nested object and none in a
    string) written without a space before a colon, as DuckDB writes JSON. It is exact: in
    JSON text ``"key":`` can only be a key (a quote inside a string is escaped), so a key
    found once is the object's, and a key not found is absent; a key found twice is read as
    ``json.loads`` reads it (the whole object parsed).
    """
    if text.count("{") != 1 or not text.lstrip().startswith("{") or '" :' in text:
        return dict(json.loads(text) or {})
    out: dict[str, Any] = {}
    decoder = json.JSONDecoder()
    try:
        for key in KEYS:
            mark = f'"{key}":'
            at = text.find(mark)
            if at < 0:
                continue
            if text.find(mark, at + 1) >= 0:
                return dict(json.loads(text) or {})
            start = at + len(mark)
            while text[start] in " \t\r\n":
                start += 1
            out[key] = decoder.raw_decode(text, start)[0]
    except (IndexError, ValueError):
        return dict(json.loads(text) or {})  # not JSON: json.loads says so
    return out
