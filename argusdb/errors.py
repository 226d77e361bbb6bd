"""One error hierarchy for argusdb.

Every user-facing error says *what* went wrong, *where* (a file, a line and column of a query)
and *what to do*. The CLI prints them without a traceback and maps them to exit codes:
``2`` for usage and input errors, ``1`` for questions the checker refused, ``3`` for questions
the store has no evidence for (the error names the ``argus observe`` request that would).

Every class is defined here, once, with its stable code; other modules import them.

Example:
    >>> err = InputError("trace.json", "truncated JSON at byte 812", "re-export the trace")
    >>> (err.code, err.exit_code, str(err))
    ('E002', 2, 'trace.json: truncated JSON at byte 812. re-export the trace')
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class ArgusError(Exception):
    """Base of every error argusdb raises on purpose."""

    exit_code = 2
    code = "E000"

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "message": str(self)}


class UsageError(ArgusError):
    """A command was called with arguments that cannot work.

    Args:
        message: what cannot work.
        fix: what to do instead; the CLI prints it on a line of its own.
    """

    code = "E001"

    def __init__(self, message: str, fix: str = "") -> None:
        self.problem = message
        self.fix = fix
        super().__init__(f"{message}. {fix}" if fix else message)

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.problem, self.fix)

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "message": str(self), **({"problem": self.problem,
                                                             "fix": self.fix} if self.fix
                                                            else {})}


class InputError(ArgusError):
    """An input file cannot be ingested. Nothing was written.

    Args:
        path: the file, as the user named it.
        problem: what is wrong with it.
        fix: what to do about it.
    """

    code = "E002"

    def __init__(self, path: str, problem: str, fix: str) -> None:
        self.path = str(path)
        self.problem = problem
        self.fix = fix
        super().__init__(f"{self.path}: {problem}. {fix}")

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled by its three parts (a reader's error crosses from an ingest worker process,
        # argusdb.ingest.pool); Exception's default would call __init__ with the message alone.
        return type(self), (self.path, self.problem, self.fix)

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "message": str(self), "file": self.path,
                "problem": self.problem, "fix": self.fix}


class StoreError(ArgusError):
    """The store cannot be opened or is not an argusdb store."""

    code = "E003"


class StoreConflict(StoreError):
    """Another writer committed first; the write must run again on the new snapshot."""


class CommandFailed(InputError):
    """The user's command (``argus observe ... -- COMMAND``) exited with an error, or never
    launched the kernel."""


@dataclass
class Finding:
    """One result of a compatibility check.

    Attributes:
        code: stable rule code, e.g. ``AR01``.
        name: dotted rule name, e.g. ``version.mixed``.
        message: what is wrong.
        remedy: what would make the question answerable.
        line: 1-based line in the query text (0 when unknown).
        col: 1-based column in the query text (0 when unknown).
    """

    code: str
    name: str
    message: str
    remedy: str = ""
    line: int = 0
    col: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "name": self.name, "message": self.message,
                               "remedy": self.remedy, "line": self.line, "col": self.col}
        out.update(self.extra)
        return out

    def __str__(self) -> str:
        where = f"line {self.line}, col {self.col}: " if self.line else ""
        # the remedy on a line of its own: a reader finds what to do without parsing the cause
        fix = f"\n  remedy: {self.remedy}" if self.remedy else ""
        return f"{self.code} {self.name}: {where}{self.message}{fix}"


class QueryRefused(ArgusError):
    """The checker refused a query; ``findings`` says why and what to do."""

    exit_code = 1
    code = "E100"

    def __init__(self, findings: list[Finding]) -> None:
        self.findings = findings
        super().__init__("\n".join(str(f) for f in findings))

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "message": str(self),
                "findings": [f.to_json() for f in self.findings]}


class QueryFailed(ArgusError):
    """A checked query failed in the engine (bad types, a time or memory limit). Nothing ran
    to completion and nothing was written.

    Args:
        problem: what DuckDB said, in one line.
        fix: what to do about it.
    """

    code = "E101"

    def __init__(self, problem: str, fix: str) -> None:
        self.problem = problem.rstrip(" .!")
        self.fix = fix
        super().__init__(f"{self.problem}. {fix[:1].upper()}{fix[1:]}")

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "message": str(self), "problem": self.problem,
                "fix": self.fix}


class PlanError(ArgusError):
    """A request cannot be planned (unknown signal, region or scope); the message says why."""

    code = "E200"


class NoGpuError(UsageError):
    """observe was asked to run a plan on a machine without an NVIDIA GPU."""

    code = "E201"


class RunnerMissingError(ArgusError):
    """This build of argusdb has no GPU runner (``argusdb.observe.runner``) to execute plans."""

    code = "E202"


class VariantMismatch(ArgusError):
    """A variant does not compute its parent's result: its evidence is kept, never derived from.
    """

    exit_code = 1
    code = "E203"


class NoEvidence(ArgusError):
    """A question the store holds no evidence for: nothing is answered (exit 3), and the
    error names what is missing and the ``argus observe`` request that would produce it.

    Args:
        missing: what has no evidence (region, signal, version).
        requests: ``argus observe ...`` commands that would collect it.
    """

    exit_code = 3
    code = "E300"

    def __init__(self, missing: str, requests: list[str]) -> None:
        self.missing = missing
        self.requests = requests
        fix = "; ".join(requests)
        super().__init__(f"no evidence: {missing}. To produce it: {fix}")

    def to_json(self) -> dict[str, Any]:
        return {"code": self.code, "message": str(self), "no_evidence": self.missing,
                "requests": self.requests}


class LostConnection(StoreError):
    """The connection to a shared store's PostgreSQL went away before the write committed
    (nothing stored)."""
