"""A lineage's keys read without parsing the rest (argusdb.answers.lineage) are what parsing
the whole object gives, for any JSON object, compact or not, flat or nested."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from argusdb.answers.lineage import KEYS, lineage_keys

_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=12),
                     st.floats(allow_nan=False, allow_infinity=False))
_values = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=3)),
    max_leaves=8)
_keys = st.one_of(st.sampled_from([*KEYS, "run_id", "source_evidence_ids", "table"]),
                  st.text(max_size=20))


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_keys, _values, max_size=6), st.booleans())
def test_the_keys_read_are_those_of_the_whole_object(obj: dict[str, object],
                                                     compact: bool) -> None:
    text = json.dumps(obj, separators=(",", ":") if compact else None)
    whole = json.loads(text)
    got = lineage_keys(text)
    assert {k: got[k] for k in KEYS if k in got} == {k: whole[k] for k in KEYS if k in whole}


def test_an_attribution_lineage_skips_its_ids() -> None:
    ids = ",".join(str(21475270661 + i) for i in range(200))
    text = (f'{{"run_id":"6119fece","task_id":"t-6119fece","table":"region_attribution",'
            f'"mapping_run_ids":["m1","m2"],"n_shared_rows":0,"source_evidence_ids":[{ids}]}}')
    assert lineage_keys(text) == {"mapping_run_ids": ["m1", "m2"]}
    # a key's text inside a string value is no key
    tricky = '{"note":"\\"parent_run_id\\":\\"x\\"","parent_run_id":null}'
    assert lineage_keys(tricky) == {"parent_run_id": None} == \
        {k: v for k, v in json.loads(tricky).items() if k in KEYS}
