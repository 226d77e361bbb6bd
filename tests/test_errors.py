"""Errors live in one place: every ArgusError class is defined in argusdb/errors.py, once, and
no two classes share a stable code."""

from __future__ import annotations

import importlib
import pkgutil
import re

import argusdb
from argusdb import errors
from tests.conftest import ROOT


def _subclasses(cls: type) -> list[type]:
    out = []
    for sub in cls.__subclasses__():
        out += [sub, *_subclasses(sub)]
    return out


def test_every_error_class_is_defined_in_errors_py() -> None:
    for mod in pkgutil.walk_packages(argusdb.__path__, "argusdb."):
        if mod.name.endswith("__main__") or mod.name.startswith("argusdb.demo.h200"):
            continue
        try:
            importlib.import_module(mod.name)
        except ImportError:  # optional extras (the GPU runner's worker, MCP) may be absent
            continue
    classes = _subclasses(errors.ArgusError)
    assert {c.__name__ for c in classes} >= {"PlanError", "NoGpuError", "RunnerMissingError",
                                            "VariantMismatch", "CommandFailed", "StoreConflict"}
    elsewhere = [f"{c.__module__}.{c.__name__}" for c in classes
                 if c.__module__ != "argusdb.errors" and not c.__module__.startswith("tests")]
    assert elsewhere == []
    own = [c.__dict__["code"] for c in [errors.ArgusError, *classes] if "code" in c.__dict__]
    assert len(own) == len(set(own)), sorted(own)


def test_no_error_code_is_written_out_twice_in_the_package() -> None:
    pattern = re.compile(r'code\s*=\s*"E\d{3}"')
    hits = [str(p.relative_to(ROOT)) for base in ("argusdb",)
            for p in (ROOT / base).rglob("*.py") if pattern.search(p.read_text())]
    assert hits == ["argusdb/errors.py"]
