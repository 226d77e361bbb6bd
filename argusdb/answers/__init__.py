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
