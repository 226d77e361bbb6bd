"""Run the hostile corpus through the API or the CLI in this (child) process; print JSON.

The tests start it as a subprocess with its address space capped, so a question that builds
a huge list fails in DuckDB instead of growing the test runner.

Usage: python -m tests.surface.drive STORE api-rw|api-ro|cli TIMEOUT_S [INDEX,...]

With INDEX,... only those cases of the corpus run (the test measures a slow case again alone).
Each time is ``[seconds, family, sql[:100], index]``.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence

from argusdb.api import cap_process_memory
from tests.surface.corpus import Case, corpus

MEMORY = 8 * 2**30


def _api(store: str, read_only: bool, timeout_s: float,
         cases: Sequence[tuple[int, Case]]) -> dict[str, object]:
    import argusdb
    from argusdb.errors import ArgusError

    crashes: list[str] = []
    times: list[tuple[float, str, str, int]] = []
    answered = refused = 0
    with argusdb.connect(store, read_only=read_only, timeout_s=timeout_s) as db:
        for index, case in cases:
            t0 = time.monotonic()
            try:
                db.query(case.sql)
                answered += 1
            except ArgusError:
                refused += 1
            except Exception as exc:  # a crash: anything but argusdb's own errors
                crashes.append(f"{case.family}: {case.sql[:60]!r}: {exc!r}"[:300])
            times.append((time.monotonic() - t0, case.family, case.sql[:100], index))
            if case.family in ("write", "malformed"):
                for fn in (db.check, db.explain):
                    try:
                        fn(case.sql)
                    except ArgusError:
                        pass
                    except Exception as exc:
                        crashes.append(f"{fn.__name__} {case.sql[:60]!r}: {exc!r}"[:300])
    return {"crashes": crashes, "times": times, "answered": answered, "refused": refused}


def _cli(store: str, timeout_s: float, cases: Sequence[tuple[int, Case]]) -> dict[str, object]:
    from click.testing import CliRunner

    import argusdb.cli.output
    from argusdb.cli import main
    from argusdb.store.guard import set_overrun_handler

    # A query that ignores its interrupt ends the real CLI process at the overrun
    # (tests/surface/test_hostile_api_cli.py checks that on a subprocess per query). In
    # process the driver keeps going: it records when the overrun came, which is when the
    # real command would have answered, and counts that as the case's time.
    overran_at: list[float] = []
    set_overrun_handler(lambda: overran_at.append(time.monotonic()))
    argusdb.cli.output.set_overrun_handler = lambda h: None  # type: ignore[assignment]
    bad: list[str] = []
    times: list[tuple[float, str, str, int]] = []
    codes: dict[int, int] = {}
    overruns = 0
    for index, case in cases:
        overran_at.clear()
        t0 = time.monotonic()
        res = CliRunner().invoke(main, ["query", "--timeout", str(timeout_s), "--json", store,
                                        "--", case.sql])
        end = overran_at[0] if overran_at else time.monotonic()
        overruns += bool(overran_at)
        times.append((end - t0, case.family, case.sql[:100], index))
        crashed = res.exception is not None and not isinstance(res.exception, SystemExit)
        codes[res.exit_code] = codes.get(res.exit_code, 0) + 1
        if crashed or res.exit_code not in (0, 1, 2) or "Traceback" in res.output:
            bad.append(f"{res.exit_code} {case.sql[:60]!r}: {res.output[-200:]!r} "
                       f"{res.exception!r}"[:400])
    return {"crashes": bad, "times": times, "codes": codes, "overruns": overruns}


if __name__ == "__main__":
    cap_process_memory(MEMORY)
    store, mode, timeout = sys.argv[1], sys.argv[2], float(sys.argv[3])
    only = {int(i) for i in sys.argv[4].split(",")} if len(sys.argv) > 4 else None
    cases = [(i, c) for i, c in enumerate(corpus()) if only is None or i in only]
    out = (_cli(store, timeout, cases) if mode == "cli"
           else _api(store, mode == "api-ro", timeout, cases))
    print(json.dumps(out))
