"""The A/B's figures from its logs and stores: per kernel and arm, speed-ups with CIs over seeds.

    python -m experiments.ab.summary DIR [DIR...] [--out OUT]
        # writes OUT/summary.json and OUT/summary.md (OUT: the first DIR)

Several DIRs (runs of ``experiments.ab.run`` with different seeds, e.g. two GPU calls) are pooled:
each run's speed-up uses the verification of its own DIR.

A run's **budgeted** best is its fastest correct measurement (the base included) whose
cumulative charge (candidates and evidence) stayed within the budget; its **fixed-trial** best,
the fastest of the base and the first ``trials`` candidates, evidence free. Speed-up = the base's
verified duration / the best configuration's verified duration: per configuration, the median
over its interleaved re-timings (see :mod:`experiments.ab.run`) of each re-timing run's median
kernel duration, read from the store (``evidence``, signal ``duration``, one value per launch).
CI: 95 % Student t over seeds (mean of the per-seed
speed-ups). A kernel counts as improved by an arm when every seed's verified speed-up is
above 1.01. Geomean over kernels of the per-kernel mean speed-up. Evidence over latency: per
(kernel, seed) the evidence arm's speed-up over the latency arm's (same seed, same random
stream), geomean with a 95 % t interval on the logs, and how many pairs differ by over 1 %.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path
from typing import Any

ARMS = ("latency", "evidence")
SETTINGS = ("budget", "fixed")
IMPROVED = 1.01


def read(kdir: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    meta = json.loads((kdir / "meta.json").read_text())
    rows = [json.loads(ln) for ln in (kdir / "log.jsonl").read_text().splitlines() if ln]
    return meta, rows


def key(cfg: dict[str, int]) -> str:
    return ",".join(f"{k}={cfg[k]}" for k in sorted(cfg))


def best_of(steps: list[dict[str, Any]], setting: str, trials: int) -> dict[str, Any] | None:
    """The run's best correct measurement under ``setting`` ('budget' or 'fixed')."""
    best = None
    for s in steps:
        if s["kind"] not in ("base", "candidate") or not s.get("ok"):
            continue
        if s.get("duration_ns") is None:
            continue
        if setting == "budget" and s["spent_s"] > s["budget_s"]:
            continue
        if setting == "fixed" and s.get("candidate", 0) > trials:
            continue
        if best is None or s["duration_ns"] < best["duration_ns"]:
            best = s
    return best


def t_ci(xs: list[float]) -> tuple[float, float, float]:
    """Mean and 95 % Student-t interval of ``xs`` (the interval collapses for one value)."""
    m = statistics.fmean(xs)
    if len(xs) < 2:
        return m, m, m
    from scipy import stats

    h = stats.t.ppf(0.975, len(xs) - 1) * statistics.stdev(xs) / math.sqrt(len(xs))
    return m, m - h, m + h


def verified(kdir: Path, rows: list[dict[str, Any]]) -> dict[str, float]:
    """Configuration key -> median over its verification runs of each run's median duration,
    from the kernel's store (read-only, through the checked query surface)."""
    from argusdb.api import connect
    from argusdb.schema.sqltext import literal

    versions: dict[str, str] = {}
    for r in rows:
        if r["kind"] == "verify" and r.get("ok") and r.get("version"):
            versions[r["key"]] = r["version"]
    if not versions:
        return {}
    out: dict[str, float] = {}
    # A version of the kernel's program holds that kernel's launches only (ingest keeps other
    # kernels of a trace in a timeline version of their own).
    with connect(kdir / "store.duckdb", read_only=True) as db:
        for k, v in versions.items():
            if not all(c in "0123456789abcdef" for c in v):
                raise ValueError(f"{kdir}: unexpected version {v!r} in log.jsonl")
            runs = db.query(
                "SELECT run_id, median(value) AS d FROM evidence WHERE signal = 'duration' "
                f"AND evidence_class = 'observed' AND program_version = {literal(v)} "
                "AND region_id IS NOT NULL GROUP BY run_id").to_pylist()
            if runs:
                out[k] = statistics.median(float(x["d"]) for x in runs)
    return out


def summarize(dirs: list[Path]) -> dict[str, Any]:
    parts: dict[str, list[tuple[dict[str, Any], list[dict[str, Any]], dict[str, float]]]] = {}
    for out in dirs:
        for kdir in sorted(p for p in out.iterdir() if (p / "meta.json").exists()):
            meta, rows = read(kdir)
            parts.setdefault(meta["kernel"], []).append(
                (meta, rows, verified(kdir, rows)))
    kernels: dict[str, Any] = {}
    for name, plist in sorted(parts.items()):
        meta = plist[0][0]
        trials = int(meta["trials"])
        base_key = key(meta["base"])
        runs: dict[tuple[str, int], list[dict[str, Any]]] = {}
        vmed_of: dict[tuple[str, int], dict[str, float]] = {}
        for _m, rows, vmed in plist:
            for r in rows:
                if r.get("arm") in ARMS:
                    runs.setdefault((r["arm"], int(r["seed"])), []).append(r)
                    vmed_of[(r["arm"], int(r["seed"]))] = vmed
        per: dict[str, Any] = {}
        for arm in ARMS:
            entry: dict[str, Any] = {}
            for setting in SETTINGS:
                sp, search_sp, cfgs = [], [], []
                for (a, seed), steps in sorted(runs.items()):
                    if a != arm:
                        continue
                    vmed = vmed_of[(a, seed)]
                    b = best_of(steps, setting, trials)
                    base = next((s for s in steps if s["kind"] == "base"), None)
                    if b is None or base is None or not base.get("ok"):
                        continue
                    bk = key(b["cfg"])
                    cfgs.append(bk)
                    search_sp.append(base["duration_ns"] / b["duration_ns"])
                    if bk in vmed and base_key in vmed:
                        sp.append(vmed[base_key] / vmed[bk])
                m, lo, hi = t_ci(sp) if sp else (math.nan, math.nan, math.nan)
                entry[setting] = {"speedups": sp, "mean": m, "ci": [lo, hi],
                                  "improved": bool(sp) and all(x > IMPROVED for x in sp),
                                  "search_speedups": search_sp, "best_cfgs": cfgs}
            cand = evid = cand_in = evid_in = 0.0
            n_cand = n_probe = 0
            compile_s = 0.0
            for (a, _seed), steps in runs.items():
                if a != arm:
                    continue
                for s in steps:
                    c = float(s.get("charged_s") or 0.0)
                    compile_s += float(s.get("compile_s") or 0.0)
                    within = s["spent_s"] <= s["budget_s"]
                    if s["kind"] == "evidence":
                        evid += c
                        evid_in += c if within else 0.0
                        n_probe += int(bool(s.get("probe")))
                    else:
                        cand += c
                        cand_in += c if within else 0.0
                        n_cand += int(s["kind"] == "candidate")
            entry["gpu_s"] = {"candidates": cand, "evidence": evid,
                              "candidates_within_budget": cand_in,
                              "evidence_within_budget": evid_in}
            entry["n_candidates"] = n_cand
            entry["n_probes"] = n_probe
            entry["compile_s"] = compile_s
            entry["candidates_within_budget"] = _within(runs, arm)
            per[arm] = entry
        kernels[name] = {"meta": {
            "budget_s": [m["budget_s"] for m, _, _ in plist],
            "budget_x": meta["budget_x"], "trials": trials, "gpu": meta["gpu"],
            "shape": meta["shape"], "seeds": sorted(s for m, _, _ in plist for s in m["seeds"]),
            "wall_s": [m["wall_s"] for m, _, _ in plist]},
            "verified_base_ns": [v.get(base_key) for _, _, v in plist], "arms": per}
    totals: dict[str, Any] = {}
    for arm in ARMS:
        t: dict[str, Any] = {}
        for setting in SETTINGS:
            means = [k["arms"][arm][setting]["mean"] for k in kernels.values()
                     if not math.isnan(k["arms"][arm][setting]["mean"])]
            t[setting] = {
                "geomean_speedup": math.exp(statistics.fmean(math.log(x) for x in means))
                if means else math.nan,
                "kernels_improved": sum(k["arms"][arm][setting]["improved"]
                                        for k in kernels.values()),
                "kernels": len(kernels)}
        t["gpu_s"] = {f: sum(k["arms"][arm]["gpu_s"][f] for k in kernels.values())
                      for f in ("candidates", "evidence", "candidates_within_budget",
                                "evidence_within_budget")}
        totals[arm] = t
    paired: dict[str, Any] = {}
    for setting in SETTINGS:
        logs, wins, losses = [], 0, 0
        for k in kernels.values():
            a = k["arms"]["latency"][setting]
            b = k["arms"]["evidence"][setting]
            for x, y in zip(a["speedups"], b["speedups"], strict=False):
                r = y / x
                logs.append(math.log(r))
                wins += r > IMPROVED
                losses += r < 1 / IMPROVED
        m, lo, hi = t_ci(logs) if logs else (math.nan, math.nan, math.nan)
        paired[setting] = {"geomean_ratio": math.exp(m), "ci": [math.exp(lo), math.exp(hi)],
                           "pairs": len(logs), "evidence_ahead": wins, "latency_ahead": losses}
    return {"kernels": kernels, "totals": totals, "evidence_over_latency": paired}


def _within(runs: dict[tuple[str, int], list[dict[str, Any]]], arm: str) -> float:
    """Mean number of candidates per run measured within the budget."""
    counts = [sum(1 for s in steps if s["kind"] == "candidate" and s["spent_s"] <= s["budget_s"])
              for (a, _), steps in runs.items() if a == arm]
    return statistics.fmean(counts) if counts else 0.0


def _fmt(e: dict[str, Any]) -> str:
    if math.isnan(e["mean"]):
        return "n/a"
    return f"{e['mean']:.3f} [{e['ci'][0]:.3f}, {e['ci'][1]:.3f}]"


def markdown(s: dict[str, Any]) -> str:
    lines = ["| kernel | budget (GPU s per arm) | latency arm, budgeted | evidence arm, budgeted "
             "| latency arm, fixed trials | evidence arm, fixed trials | evidence arm's probes "
             "/ GPU s on evidence | candidates within budget (lat / evid, mean per run) |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name, k in s["kernels"].items():
        a = k["arms"]
        lines.append(
            f"| {name} | {' / '.join(f'{b:.3f}' for b in k['meta']['budget_s'])} | "
            f"{_fmt(a['latency']['budget'])} | "
            f"{_fmt(a['evidence']['budget'])} | {_fmt(a['latency']['fixed'])} | "
            f"{_fmt(a['evidence']['fixed'])} | {a['evidence']['n_probes']} / "
            f"{a['evidence']['gpu_s']['evidence']:.3f} | "
            f"{a['latency']['candidates_within_budget']:.1f} / "
            f"{a['evidence']['candidates_within_budget']:.1f} |")
    lines.append("")
    lines.append("| arm | setting | geomean speed-up | kernels improved | GPU s on candidates "
                 "| GPU s on evidence |")
    lines.append("| --- | --- | --- | --- | --- | --- |")
    for arm, t in s["totals"].items():
        for setting in SETTINGS:
            lines.append(f"| {arm} | {setting} | {t[setting]['geomean_speedup']:.4f} | "
                         f"{t[setting]['kernels_improved']} / {t[setting]['kernels']} | "
                         f"{t['gpu_s']['candidates']:.2f} | {t['gpu_s']['evidence']:.2f} |")
    lines.append("")
    lines.append("| setting | evidence / latency speed-up, geomean over (kernel, seed) [95 % CI] "
                 "| pairs | evidence ahead > 1 % | latency ahead > 1 % |")
    lines.append("| --- | --- | --- | --- | --- |")
    for setting, p in s["evidence_over_latency"].items():
        lines.append(f"| {setting} | {p['geomean_ratio']:.4f} [{p['ci'][0]:.4f}, "
                     f"{p['ci'][1]:.4f}] | {p['pairs']} | {p['evidence_ahead']} | "
                     f"{p['latency_ahead']} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m experiments.ab.summary")
    ap.add_argument("dirs", nargs="+", type=Path, help="folders written by experiments.ab.run")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args(sys.argv[1:] if argv is None else argv)
    bad = [str(d) for d in a.dirs if not d.is_dir() or not any(d.glob("*/meta.json"))]
    if bad:
        print(f"error: {', '.join(bad)}: not a folder written by experiments.ab.run (no "
              f"KERNEL/meta.json); run python -m experiments.ab.run --out DIR first",
              file=sys.stderr)
        return 2
    out = a.out or a.dirs[0]
    out.mkdir(parents=True, exist_ok=True)
    s = summarize(a.dirs)
    (out / "summary.json").write_text(json.dumps(s, indent=1, sort_keys=True))
    md = markdown(s)
    (out / "summary.md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
