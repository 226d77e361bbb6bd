"""Source transforms on the three kernels of argusdb/demo/kernels: structure, regions, errors."""

from __future__ import annotations

import ast

import pytest

from argusdb.collectors.regions import ProgramSource, parse_regions
from argusdb.errors import InputError
from argusdb.observe.transforms import apply, forced_wait, pipelining_off, proton_scopes
from tests.transforms.kernels import KERNELS


def src(name: str) -> ProgramSource:
    return ProgramSource.from_path(KERNELS / f"{name}.py")


def region_ids(s: ProgramSource) -> set[str]:
    return {r.region_id for r in parse_regions(s)}


@pytest.mark.parametrize(("program", "region", "waited"), [
    ("softmax", "load", ["x"]),
    ("matmul", "mainloop", ["a", "b"]),
    ("attention", "load_q", ["q"]),
    ("attention", "load_k", ["kt"]),
    ("attention", "attention/attn_fwd/load_v", ["v"]),
])
def test_forced_wait_waits_for_each_loaded_name_right_after_the_loads(program, region, waited):
    parent = src(program)
    v = forced_wait(parent, region)
    ast.parse(v.source.text)
    assert v.source.name == parent.name
    assert region_ids(parent) <= region_ids(v.source)
    assert v.transform == f"forced_wait:{program}/{parent_kernel(program)}/{region.split('/')[-1]}"
    lines = v.source.text.splitlines()
    calls = [i for i, ln in enumerate(lines) if "= _argus_forced_wait(" in ln]
    assert [lines[i].split("=")[0].strip() for i in calls] == waited
    # the waits follow the last load of their block directly, at its indentation
    assert "tl.load(" in lines[calls[0] - 1]
    load_indent = len(lines[calls[0] - 1]) - len(lines[calls[0] - 1].lstrip())
    assert all(len(lines[i]) - len(lines[i].lstrip()) == load_indent for i in calls)


def parent_kernel(program: str) -> str:
    return {"softmax": "softmax_fwd", "matmul": "matmul_kernel", "attention": "attn_fwd"}[program]


def test_forced_wait_keeps_the_region_spans_around_the_inserted_lines():
    v = forced_wait(src("attention"), "load_k")
    spans = {r.name: r for r in parse_regions(v.source) if r.kernel == "attn_fwd"}
    lines = v.source.text.splitlines()
    wait = next(i + 1 for i, ln in enumerate(lines) if "kt = _argus_forced_wait(kt)" in ln)
    assert spans["load_k"].start_line < wait <= spans["load_k"].end_line


def test_forced_wait_refuses_a_region_without_loads():
    with pytest.raises(InputError, match=r"assigns no tl\.load result"):
        forced_wait(src("softmax"), "reduce")


def test_unknown_region_names_the_known_ones():
    with pytest.raises(InputError) as err:
        forced_wait(src("softmax"), "nope")
    assert "softmax/softmax_fwd/load" in str(err.value)


def test_proton_scopes_wrap_each_region_in_its_block():
    parent = src("attention")
    names = ["load_q", "load_k", "qk", "softmax", "load_v", "pv", "epilogue"]
    v = proton_scopes(parent, names)
    ast.parse(v.source.text)
    assert region_ids(v.source) == region_ids(parent)
    text = v.source.text
    for n in names:
        assert text.count(f'_argus_pl.enter_scope("{n}")') == 1
        assert text.count(f'_argus_pl.exit_scope("{n}")') == 1
    assert '_argus_pl.enable_semantic("triton")' in text
    # every enter is followed by its exit before the next enter, at the same indentation
    lines = [ln for ln in text.splitlines() if "_argus_pl." in ln and "scope(" in ln]
    for enter, exit_ in zip(lines[::2], lines[1::2], strict=True):
        assert "enter_scope" in enter and "exit_scope" in exit_
        assert enter.split("_argus")[0] == exit_.split("_argus")[0]
        assert enter.split('"')[1] == exit_.split('"')[1]


def test_proton_scopes_move_an_end_of_line_marker_onto_the_scope_entry():
    v = proton_scopes(src("matmul"), ["mainloop", "epilogue"])
    lines = v.source.text.splitlines()
    i = next(i for i, ln in enumerate(lines) if 'enter_scope("mainloop")' in ln)
    assert lines[i].rstrip().endswith("# region mainloop")
    assert lines[i + 1].lstrip().startswith("for k in range(0, K, BK):")
    mainloop = next(r for r in parse_regions(v.source) if r.name == "mainloop")
    assert mainloop.start_line == i + 1
    exit_line = next(j for j, ln in enumerate(lines) if 'exit_scope("mainloop")' in ln) + 1
    assert mainloop.start_line < exit_line <= mainloop.end_line


def test_pipelining_off_is_an_option_not_a_source_change():
    parent = src("matmul")
    v = pipelining_off(parent)
    assert v.source == parent and v.options == {"num_stages": 1}
    assert apply("pipelining_off", parent, {}).transform == "pipelining_off"


def test_apply_dispatches_plan_actions_and_rejects_unknown_ones():
    assert apply("forced_wait", src("softmax"), {"region_id": "load"}).regions == (
        "softmax/softmax_fwd/load",)
    assert apply("proton_scopes", src("softmax"), {"region_ids": ["load"]}).regions == (
        "softmax/softmax_fwd/load",)
    with pytest.raises(InputError, match="unknown transform"):
        apply("unroll", src("softmax"), {})
