"""A hostile corpus: questions that try to write, leak or exhaust, and a seeded SQL fuzz.

Families (each query is tagged with one):

- ``write``: sequences (``nextval``/``currval`` anywhere in a query, where the checker's
  metadata queries evaluate it too), settings, DDL and DML, transactions, extensions;
- ``leak``: files, URLs, environment, other databases;
- ``exhaust``: huge answers, long scans, recursion, big strings and lists;
- ``slow_operator``: a single operator that checks DuckDB's interrupt only between vectors
  (the CLI and the MCP worker end the process at the deadline; a library caller waits);
- ``malformed``: not valid text, NUL, empty, comments only, deep nesting, megabyte queries;
- ``fuzz``: seeded mutations (token deletions, duplications, swaps and insertions of hostile
  tokens) of well-formed questions.

Example:
    >>> len(corpus()) > 300
    True
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    family: str
    sql: str


SEQ = "run_seq_gen"

_WRITE = [
    f"SELECT nextval('{SEQ}') AS n",
    f"SELECT nextval('main.{SEQ}') AS n FROM range(1000)",
    f"SELECT NEXTVAL('{SEQ}') AS n",
    f"SELECT \"nextval\"('{SEQ}') AS n",
    f"SELECT currval('{SEQ}') AS n",
    f"SELECT count(*) AS n FROM evidence WHERE nextval('{SEQ}') > 0",
    f"SELECT count(*) AS n FROM evidence WHERE run_id IN (SELECT nextval('{SEQ}')::VARCHAR "
    f"FROM range(1000))",
    f"SELECT count(*) AS n FROM evidence WHERE region_id = (SELECT nextval('{SEQ}')::VARCHAR)",
    f"WITH s AS (SELECT nextval('{SEQ}') AS n FROM range(100)) SELECT max(n) AS n FROM s",
    f"SELECT n FROM (SELECT nextval('{SEQ}') AS n FROM range(10)) ORDER BY n",
    f"SELECT list_transform(range(1000), x -> nextval('{SEQ}')) AS l",
    f"SELECT run_id FROM run ORDER BY nextval('{SEQ}')",
    f"SELECT run_id, count(*) AS n FROM run GROUP BY run_id HAVING nextval('{SEQ}') > 0",
    f"SELECT run_id FROM run WHERE EXISTS (SELECT nextval('{SEQ}'))",
    f"SELECT sum(nextval('{SEQ}')) OVER () AS n FROM run",
    f"SELECT * FROM run, LATERAL (SELECT nextval('{SEQ}') AS n)",
    f"SELECT count(*) AS n FROM range(25000000) WHERE nextval('{SEQ}') > 0",
    f"SELECT CASE WHEN true THEN nextval('{SEQ}') END AS n",
    f"SELECT coalesce(NULL, nextval('{SEQ}')) AS n",
    "SELECT nextval(concat('run_seq', '_gen')) AS n",
    "SELECT setval('run_seq_gen', 2147483647) AS n",
    "SET threads = 64",
    "SET memory_limit = '100GB'",
    "SET enable_external_access = true",
    "RESET lock_configuration",
    "PRAGMA enable_profiling",
    "SELECT set_config('threads', '64', false) AS x",
    "SELECT current_setting('enable_external_access') AS x",
    "DROP TABLE run",
    "DELETE FROM run",
    "UPDATE run SET run_seq = 2147483647",
    "INSERT INTO run (run_id) VALUES ('x')",
    "CREATE TABLE pwn AS SELECT 1 AS a",
    "CREATE TEMP TABLE pwn AS SELECT 1 AS a",
    "CREATE SEQUENCE pwn",
    "CREATE MACRO pwn(a) AS a",
    "ALTER TABLE run ADD COLUMN pwn INTEGER",
    "ALTER SEQUENCE run_seq_gen RESTART WITH 1",
    "DROP SEQUENCE run_seq_gen",
    "COPY run TO 'pwn.csv'",
    "EXPORT DATABASE 'pwn'",
    "ATTACH ':memory:' AS pwn",
    "DETACH main",
    "CHECKPOINT",
    "FORCE CHECKPOINT",
    "VACUUM",
    "CALL checkpoint()",
    "SELECT * FROM checkpoint()",
    "SELECT * FROM force_checkpoint()",
    "INSTALL httpfs",
    "LOAD httpfs",
    "BEGIN TRANSACTION",
    "COMMIT",
    "ROLLBACK",
    "SELECT 1 AS a; DROP TABLE run",
    "SELECT 1 AS a; SELECT nextval('run_seq_gen')",
    "WITH d AS (DELETE FROM run RETURNING *) SELECT * FROM d",
    "SELECT * FROM (INSERT INTO run (run_id) VALUES ('x') RETURNING *)",
    "USE memory",
    "SELECT * FROM duckdb_secrets()",
    "CREATE SECRET pwn (TYPE s3, KEY_ID 'a', SECRET 'b')",
    "SELECT setseed(0.5) AS x",
]

_LEAK = [
    "SELECT * FROM read_csv('/etc/passwd')",
    "SELECT * FROM read_text('/etc/passwd')",
    "SELECT * FROM read_blob('/etc/hostname')",
    "SELECT * FROM '/etc/passwd'",
    "SELECT * FROM read_parquet('https://example.com/x.parquet')",
    "SELECT * FROM read_json_auto('http://169.254.169.254/latest/meta-data')",
    "SELECT * FROM glob('/*')",
    "SELECT getenv('HOME') AS h",
    "SELECT * FROM sqlite_scan('x.sqlite', 'a')",
    "SELECT * FROM parquet_metadata('/etc/passwd')",
    "SELECT * FROM duckdb_extensions()",
    "SELECT * FROM duckdb_settings()",
    "SELECT * FROM pragma_database_list",
    "SELECT * FROM read_csv(['/etc/passwd', '/etc/group'])",
    "SELECT * FROM query('SELECT 1')",
    "SELECT * FROM query_table('run')",
    "SELECT * FROM postgres_scan('host=x', 'public', 't')",
    "SELECT load_extension('httpfs') AS x",
]

_EXHAUST = [
    "SELECT * FROM range(30000000)",
    "SELECT * FROM generate_series(1, 100000000)",
    "SELECT count(*) AS n FROM generate_series(1, 100000000000)",
    "SELECT * FROM range(3000000) a, range(3000000) b",
    "SELECT e1.value FROM evidence e1, evidence e2, evidence e3, evidence e4",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT * FROM r",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r) SELECT count(*) FROM r",
    "SELECT string_agg(x::VARCHAR, ',') AS s FROM range(100000000) t(x)",
    "SELECT unnest(range(1000000000)) AS x",
    "SELECT md5(x::VARCHAR) AS h FROM range(50000000) t(x) ORDER BY h",
    "SELECT count(DISTINCT x) AS n FROM range(200000000) t(x)",
    "SELECT * FROM range(20000000) ORDER BY random()",
]

#: Single operators that ignore DuckDB's interrupt for seconds on a busy host.
SLOW_OPERATOR = [
    "SELECT max(len(range(x))) AS m FROM range(100000) t(x)",
    "SELECT len(list_sort(range(30000000))) AS n",
    "SELECT len(repeat('x', 2000000000)) AS n",
    "SELECT repeat('x', 100000000) AS s FROM range(100)",
]


def _malformed() -> list[str]:
    deep = "SELECT " + "(" * 3000 + "1" + ")" * 3000 + " AS x"
    return [
        "SELECT '\ud800' AS x",
        "SELECT 1 AS \udcff",
        "SELECT 'a\x00b' AS x",
        "",
        "   ",
        "-- only a comment",
        "/* unterminated",
        "SELECT 'unterminated",
        "SELECT",
        ";;;",
        deep,
        "SELECT " + " + ".join(["1"] * 20000) + " AS x",
        "SELECT 1 AS x -- " + "y" * 1_000_000,
        "SELECT " + ", ".join(f"{i} AS c{i}" for i in range(2000)),
        "\ufeffSELECT 1 AS x",
        "SELECT 1 AS x\x1a",
        "SELECT '\u202e' AS x",
        "-- comment\nSELECT 1 AS x",
        "--json",
        "--help",
    ]


_SEEDS = [
    "SELECT count(*) AS n FROM run",
    "SELECT signal, count(*) AS n FROM evidence GROUP BY signal",
    "SELECT region_id, median(value) AS med FROM evidence WHERE region_id = "
    "'softmax/softmax_fwd' AND signal = 'duration' GROUP BY region_id",
    "SELECT run_id, collector FROM run ORDER BY run_seq LIMIT 5",
    "SELECT program_version, count(*) AS n FROM evidence GROUP BY program_version",
    "WITH t AS (SELECT value FROM evidence WHERE signal = 'duration') SELECT count(*) FROM t",
    "SELECT * FROM version_diff('duration', 'a', 'b')",
    "SELECT kernel, count(*) AS n FROM kernel_launch GROUP BY kernel",
    "SELECT max(value) AS m FROM evidence WHERE run_id IN (SELECT run_id FROM run)",
]

_POOL = [f"nextval('{SEQ}')", "nextval", "(", ")", ",", ";", "'", '"', "--", "/*", "*/",
         "SELECT", "FROM", "WHERE", "DROP", "TABLE", "run", "evidence", "range(30000000)",
         "read_csv('/etc/passwd')", "UNION ALL", "JOIN", "ON", "*", "1e309", "NULL",
         "'\\x00'", "generate_series(1, 100000000)", "SET", "threads", "=", "ATTACH",
         "COPY", "TO", "'pwn.csv'", "currval('run_seq_gen')", "CROSS JOIN range(100000)"]


def fuzz(n: int, seed: int = 17) -> list[str]:
    """``n`` seeded mutations of the seed questions."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        toks = re.findall(r"'[^']*'|\w+|\S", rng.choice(_SEEDS))
        for _ in range(rng.randint(1, 3)):
            op = rng.choice(("delete", "duplicate", "swap", "insert", "insert"))
            i = rng.randrange(len(toks))
            if op == "delete" and len(toks) > 1:
                del toks[i]
            elif op == "duplicate":
                toks.insert(i, toks[i])
            elif op == "swap":
                j = rng.randrange(len(toks))
                toks[i], toks[j] = toks[j], toks[i]
            else:
                toks.insert(i, rng.choice(_POOL))
        out.append(" ".join(toks))
    return out


def corpus(n_fuzz: int = 200) -> list[Case]:
    """Every case, slow operators excluded (see :data:`SLOW_OPERATOR`)."""
    return ([Case("write", q) for q in _WRITE] + [Case("leak", q) for q in _LEAK]
            + [Case("exhaust", q) for q in _EXHAUST]
            + [Case("malformed", q) for q in _malformed()]
            + [Case("fuzz", q) for q in fuzz(n_fuzz)])
