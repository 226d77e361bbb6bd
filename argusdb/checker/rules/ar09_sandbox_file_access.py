"""AR09 sandbox.file_access: queries read the store, never files, URLs or other databases."""

from __future__ import annotations

from sqlglot import exp

from argusdb.checker.constructs import CONSTRUCTS
from argusdb.checker.context import Context
from argusdb.checker.functions import SAFE_TABLES, catalogue
from argusdb.checker.resolve import relation_of
from argusdb.checker.rules import Rule
from argusdb.errors import Finding


class SandboxFileAccess(Rule):
    """No table function that reads outside the store (``read_csv``, ``read_parquet``,
    ``read_json``, ``read_text``, ``read_blob``, ``glob``, ``parquet_scan``, ``query_table``,
    ``duckdb_*`` and every other one except ``range``/``generate_series``/``unnest`` and the
    constructs), no quoted file path or URL as a table, no table of another database.

    Anti-pattern::

        SELECT * FROM read_csv('/etc/passwd')
        SELECT * FROM 'runs.parquet'

    Best practice::

        SELECT * FROM run      -- ingest files first: argus ingest STORE runs.ncu-rep
    """

    code = "AR09"
    name = "sandbox.file_access"
    phase = "sandbox"

    def check(self, ctx: Context) -> list[Finding]:
        out: list[Finding] = []
        for t in ctx.nodes():
            if isinstance(t, exp.Table):
                rel = relation_of(t)
                if rel.kind == "function" and rel.name not in SAFE_TABLES \
                        and rel.name not in CONSTRUCTS:
                    known = catalogue().get(rel.name)
                    why = known.reason if known is not None and known.reason else \
                        "is not a table function of the catalogue"
                    out.append(self.finding(
                        ctx, t, f"table function {rel.name}() is not allowed: it {why}; "
                                f"queries read only the store",
                        "ingest the data first (argus ingest STORE FILE) and query its views",
                        function=rel.name))
                elif rel.kind == "path":
                    out.append(self.finding(
                        ctx, t, f"{rel.name!r} names a file, URL or another database: queries "
                                f"read only the store",
                        "ingest the file first (argus ingest STORE FILE) and query its views",
                        path=rel.name))
        return out
