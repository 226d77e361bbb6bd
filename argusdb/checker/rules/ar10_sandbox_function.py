"""AR10 sandbox.function: no function that reads the environment, settings or other SQL."""

from __future__ import annotations

from sqlglot import exp

from argusdb.checker.context import Context
from argusdb.checker.rules import Rule
from argusdb.errors import Finding

#: Functions that read the process environment, the engine's settings, files, or run SQL text.
DENIED = frozenset({
    "getenv", "current_setting", "getvariable", "query", "query_table", "glob", "sniff_csv",
    "read_text", "read_blob", "parquet_scan", "parquet_metadata", "parquet_schema",
    "parquet_file_metadata", "parquet_kv_metadata", "json_execute_serialized_sql",
    "json_serialize_sql", "json_deserialize_sql", "checkpoint", "force_checkpoint",
    "which_secret", "load_aws_credentials", "current_database", "current_schema",
    "current_schemas", "system", "shell", "httpfs", "iceberg_scan", "delta_scan",
})
#: Name prefixes of function families that do the same.
DENIED_PREFIXES = ("read_", "duckdb_", "pragma_", "parquet_", "sqlite_", "postgres_", "mysql_",
                   "iceberg_", "delta_", "http", "s3_", "enable_", "disable_", "install",
                   "load_", "export", "import")


def function_name(node: exp.Func) -> str:
    """Lower-case SQL name of a function call as DuckDB would see it."""
    if isinstance(node, exp.Anonymous):
        return str(node.name).lower()
    return node.sql_name().lower()


class SandboxFunction(Rule):
    """No function that reads the environment (``getenv``), the engine's configuration
    (``current_setting``, ``duckdb_settings``), files (``read_text``, ``glob``), or runs other
    SQL text (``query``, ``query_table``, ``json_execute_serialized_sql``), in any position.

    Anti-pattern::

        SELECT getenv('HOME'), current_setting('enable_external_access')

    Best practice::

        SELECT tool, tool_version, device FROM run
    """

    code = "AR10"
    name = "sandbox.function"
    phase = "sandbox"

    def check(self, ctx: Context) -> list[Finding]:
        out: list[Finding] = []
        for f in ctx.nodes():
            if isinstance(f, exp.Func):
                if isinstance(f.parent, exp.Table):
                    continue  # table functions: AR09
                name = function_name(f)
                if name in DENIED or name.startswith(DENIED_PREFIXES):
                    out.append(self.finding(
                        ctx, f, f"function {name}() is not allowed: it reads outside the "
                                f"evidence (environment, settings, files or SQL text)",
                        "ask about the evidence; run and device facts are columns of run",
                        function=name))
        return out
