"""Every ``ARGUS_*`` environment variable is declared once, in ``argusdb/environment.py``, and
documented on the generated ``docs/environment.md``; code names none by a string of its own."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from argusdb import environment
from tests.conftest import ROOT

#: ``ARGUS_*`` words that are no environment variable: the header, trailer and span record
#: kinds of argusdb's JSON-lines files, and names in the source the forced-wait transform writes.
NOT_VARIABLES = {"ARGUS_HEADER", "ARGUS_TRAILER", "ARGUS_SPANS", "ARGUS_INTERPRET",
                 "ARGUS_SHFL_SELF"}
#: A read or a setting of a variable by its string, outside argusdb/environment.py.
BY_STRING = re.compile(r"""(environ(\.get)?\(?\[?|getenv\(|setenv\(|delenv\(|\{\s*)["']ARGUS_""")
#: The launcher's bootstrap checks its variable before importing argusdb (it runs in every
#: process of the user's command), so it names it itself.
BOOTSTRAP = ROOT / "argusdb" / "observe" / "launch" / "boot" / "sitecustomize.py"


def _code_files() -> list[Path]:
    out: list[Path] = []
    for folder in ("argusdb", "tools", "bench", "experiments", "tests"):
        out += [p for p in (ROOT / folder).rglob("*.py") if "data" not in p.parts]
    return [*out, ROOT / ".ci" / "run", *sorted((ROOT / "tools").rglob("*.sh"))]


def test_every_argus_variable_named_in_the_code_is_declared() -> None:
    declared = {v.name for v in environment.VARIABLES}
    named = {m for p in _code_files()
             for m in re.findall(r"\bARGUS_[A-Z0-9_]+\b", p.read_text(encoding="utf-8"))}
    assert named - NOT_VARIABLES - declared == set()
    # and each declared one is used somewhere
    assert declared - named == set()


def test_declarations_are_unique_and_of_a_known_kind() -> None:
    names = [v.name for v in environment.VARIABLES]
    assert len(names) == len(set(names))
    assert {v.kind for v in environment.VARIABLES} <= {"user", "internal", "tests"}
    assert all(v.meaning.endswith(".") and len(v.meaning) > 30 for v in environment.VARIABLES)
    module = vars(environment)
    assert {id(v) for v in environment.VARIABLES} == {
        id(v) for v in module.values() if isinstance(v, environment.Variable)}


def test_the_package_reads_and_sets_variables_only_through_the_module() -> None:
    offenders = []
    for p in (ROOT / "argusdb").rglob("*.py"):
        if p in (BOOTSTRAP, ROOT / "argusdb" / "environment.py"):
            continue
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            named = re.search(r"""= ["'](ARGUS_[A-Z_]+)["']$""", line)
            if BY_STRING.search(line) or (named and named.group(1) not in NOT_VARIABLES):
                offenders.append(f"{p.relative_to(ROOT)}:{n}: {line.strip()}")
    assert offenders == []
    assert environment.LAUNCH_SPEC.name in BOOTSTRAP.read_text(encoding="utf-8")


def test_get_reads_the_environment_given_or_this_process_s(monkeypatch) -> None:
    monkeypatch.setenv("ARGUS_STEP_MARK", "iteration")
    assert environment.STEP_MARK.get() == "iteration"
    assert environment.STEP_MARK.get({}) is None
    assert environment.STEP_MARK.get({"ARGUS_STEP_MARK": ""}) == ""
    monkeypatch.delenv("ARGUS_STEP_MARK")
    assert environment.STEP_MARK.get() is None


def test_environment_page_is_current() -> None:
    run = subprocess.run([sys.executable, "-m", "tools.environment_docs", "--check"], cwd=ROOT,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
