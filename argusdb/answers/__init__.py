"""Answers over the checked query surface: diffs, trajectories, reports, dashboards, exports.

Every answer reads the store through :meth:`argusdb.api.Connection.query`, so it rests only on
questions the checker accepted, and refuses comparisons with the checker's rule codes.

Example:
    >>> from argusdb.answers.diff import diff
    >>> with argusdb.connect("argus.duckdb") as db:
    ...     [r.signal for r in diff(db, "matmul/matmul_kernel", "config=bk64_s3",
    ...                             "config=bk32_s1").rows]
    ['duration']
"""

#: Default association entropy (bits) above which an attributed claim is insufficient: at most
#: a 90/10 split between two regions (0.47 bit). Here, not in :mod:`argusdb.answers.sufficiency`
#: alone, so that the MCP server names it without loading the answers (SciPy, sqlglot, Arrow).
MAX_ENTROPY_BITS = 0.5
