"""The kernel part of a torchrun observation: single-process signals measured in one rank.

:func:`kernel_answer` reads the evidence of the rank's kernel plan
(:mod:`argusdb.observe.planner.torchrun_kernel`) per requested signal: the rows of each
evidence class and region, all of them of that rank (``evidence.rank``), with a verdict. It
stands beside :func:`argusdb.answers.ranks.observation` (the per-rank timeline answers) in one
report.

Example:
    >>> ans = kernel_answer({"signals": ["inst_executed"], "rank": 0}, None, {})
    >>> ans["signals"]["inst_executed"]["why"]
    'the kernel plan stored no inst_executed rows'

"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

#: Signals whose rows answer a requested one: a region's ``duration`` is answered by the
#: kernel's own timing and by the region's instrumented cycles (Proton scopes).
ANSWERED_BY = {"duration": ("duration", "scope_cycles")}


def kernel_answer(request: dict[str, Any], evidence: Any, results: dict[str, Any],
                  runs: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """Per signal of the kernel plan's ``request``: its rows by evidence class, region and
    standing (count, sum, median, unit), from ``evidence`` (Arrow,
    :func:`argusdb.observe.evidence_of`), and a verdict: ``sufficient`` when rows of the
    measured rank answer it, ``not_applicable`` where the plan said so, else ``insufficient``
    with the tasks' reason.

    ``results``: the plan's task outcomes by task id (``status``, ``detail``). ``runs``: per
    run id its ``program_version``, ``signature`` and ``launch_replay``: rows of the program's
    own launches, of a replayed launch and of a variant are never pooled into one group.
    """
    rank = int(request["rank"])
    cols = evidence.to_pydict() if evidence is not None else {}
    runs = runs or {}
    Key = tuple[str, str, str | None, str, str | None, str | None, bool]
    groups: dict[Key, list[float]] = defaultdict(list)
    units: dict[Key, str] = {}
    for i in range(len(cols.get("signal", []))):
        run = runs.get(str(cols["run_id"][i]), {})
        key = (cols["signal"][i], cols["evidence_class"][i], cols["region_id"][i],
               str(cols["rank"][i]), cols["program_version"][i], run.get("signature"),
               bool(run.get("launch_replay")))
        groups[key].append(float(cols["value"][i]))
        units[key] = cols["unit"][i]
    why_not: dict[str, list[str]] = {}  # reason -> the tasks that give it
    for r in results.values():
        if r.status not in ("done", "reused"):
            why = str(r.detail.get("reason") or r.detail.get("error") or "no detail")
            why_not.setdefault(f"{r.status}: {why}", []).append(r.action)
    na = request.get("not_applicable") or {}
    out: dict[str, Any] = {}
    for sig in request["signals"]:
        names = ANSWERED_BY.get(sig, (sig.removesuffix("@proton"),))
        rows = [{"signal": k[0], "evidence_class": k[1], "region_id": k[2], "rank": k[3],
                 "program_version": k[4], "signature": k[5], "launch_replay": k[6],
                 "n": len(v), "sum": sum(v), "median": _median(v), "unit": units[k]}
                for k, v in sorted(groups.items(), key=lambda kv: tuple(map(str, kv[0])))
                if k[0] in names]
        wrong = [r for r in rows if r["rank"] != str(rank)]
        if sig in na:
            out[sig] = {"verdict": "not_applicable", "why": str(na[sig]), "rank": rank,
                        "rows": rows}
        elif rows and not wrong:
            out[sig] = {"verdict": "sufficient", "rank": rank, "rows": rows}
        else:
            why = (f"rows of ranks {sorted({str(r['rank']) for r in wrong})}, not {rank}" if wrong
                   else "; ".join(f"{', '.join(dict.fromkeys(a))} {w}"
                                  for w, a in why_not.items())
                   or f"the kernel plan stored no {sig} rows")
            out[sig] = {"verdict": "insufficient", "why": why, "rank": rank, "rows": rows}
    return {"rank": rank, "launch_group": (request.get("launch") or {}).get("launch_group"),
            "signals": out,
            "answered": all(v["verdict"] == "sufficient" for v in out.values())}


def _median(xs: list[float]) -> float:
    ys = sorted(xs)
    n = len(ys)
    return ys[n // 2] if n % 2 else (ys[n // 2 - 1] + ys[n // 2]) / 2


def describe(kernel: dict[str, Any]) -> list[str]:
    """Text lines of :func:`kernel_answer`: a verdict per signal, a line per row group."""
    lines = [f"kernel signals, rank {kernel['rank']} (launch group {kernel['launch_group']}):"]
    for sig, ans in kernel["signals"].items():
        lines.append(f"{sig}: {ans['verdict']}" + (f" ({ans['why']})" if ans.get("why")
                                                    else ""))
        for r in ans["rows"]:
            where = " (replayed launch)" if r.get("launch_replay") else ""
            lines.append(f"  rank {r['rank']} {r['evidence_class']} {r['signal']} "
                         f"{r['region_id'] or '(kernel-wide)'}{where} "
                         f"[{r.get('signature')}, {str(r.get('program_version'))[:8]}]: "
                         f"n={r['n']} "
                         f"sum={r['sum']:,.6g} median={r['median']:,.6g} {r['unit']}")
    return lines
