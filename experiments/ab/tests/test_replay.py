"""The optimizer on recorded data: replaying a recorded run's measurements, and for the evidence
arm the recorded store's answers, makes exactly the recorded moves (the search is deterministic
given its seed and what it sees, and the evidence arm's choices come from argusdb's answers)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from experiments.ab import harness
from experiments.ab.evidence import EvidenceStore
from experiments.ab.optimizer import Evidence, Result, search, weights
from experiments.ab.tests.conftest import log_rows


class Replay:
    """A backend answering from one recorded run: its measurements by configuration, and the
    evidence of its incumbents from the recorded store (real queries)."""

    def __init__(self, rows: list[dict[str, Any]], store: EvidenceStore) -> None:
        self.by_cfg = {harness.key(r["cfg"]): r for r in rows
                       if r["kind"] in ("base", "candidate")}
        self.evidence_rows = [r for r in rows if r["kind"] == "evidence"]
        self.store = store
        self.asked: list[tuple[str, bool]] = []

    def measure(self, cfg: harness.Config, parent: str | None, move: str | None) -> Result:
        r = self.by_cfg[harness.key(cfg)]
        if move is not None:
            assert (r["parent"], "move:" + r["move"]) == (parent, move)
        return Result(bool(r["ok"]), r.get("duration_ns"), r["charged_s"], 0.0,
                      r.get("version"))

    def evidence(self, version: str, cfg: harness.Config, duration_ns: float | None,
                 buy_probe: bool) -> tuple[Evidence, float, float]:
        rec = self.evidence_rows[len(self.asked)]
        self.asked.append((version, buy_probe))
        assert (rec["version"], rec["probe"]) == (version, buy_probe)
        ev = Evidence(static=self.store.static(version), duration_ns=duration_ns)
        if buy_probe:
            ev.exposed = self.store.exposed(version, _kernel_fn(self.store),
                                            harness.load_region(_mod(self.store), cfg))
        return ev, rec["charged_s"], 0.0


_MODS: dict[str, Any] = {}


def _mod(store: EvidenceStore) -> Any:
    name = store.program.stem
    if name not in _MODS:
        _MODS[name] = harness.load(name)
    return _MODS[name]


def _kernel_fn(store: EvidenceStore) -> str:
    return str(_mod(store).KERNEL)


@pytest.mark.parametrize(("part", "kernel", "seed"), [
    (0, "attention", 0), (0, "linear_epilogue", 1), (1, "matmul", 4), (1, "logsumexp", 7),
    (1, "transpose", 5)])
@pytest.mark.parametrize("arm", ["latency", "evidence"])
def test_replay_makes_the_recorded_moves(recorded: list[Path], part: int, kernel: str,
                                         seed: int, arm: str, tmp_path: Path) -> None:
    kdir = recorded[part] / kernel
    rows = [r for r in log_rows(kdir) if r.get("arm") == arm and r.get("seed") == seed]
    mod = harness.load(kernel)
    store = EvidenceStore(kdir / "store.duckdb", harness.KERNELS_DIR / f"{kernel}.py")
    try:
        backend = Replay(rows, store)
        meta_budget = rows[0]["budget_s"]
        replayed = search(kernel, mod.SPACE, mod.BASE, arm, seed, meta_budget, 16, 32,
                          backend, lambda c: harness.load_region(mod, c), lambda r: None)
    finally:
        store.close()
    strip = ("regions", "run_id")  # the first call's log has no run ids (the store has them)
    got = [(r["kind"], r.get("move"), r.get("accepted"), r.get("probe")) for r in replayed]
    want = [(r["kind"], r.get("move"), r.get("accepted"), r.get("probe")) for r in rows]
    assert got == want
    for g, w in zip(replayed, rows, strict=True):
        assert g["spent_s"] == pytest.approx(w["spent_s"])
        if g["kind"] == "candidate":
            assert g["weight"] == pytest.approx(w["weight"])
        if g["kind"] == "evidence":
            for k in ("exposed_ns", "load_share", "unattributed_share", "entropy_bits"):
                assert g.get(k) == pytest.approx(w.get(k)), k
        assert {k for k in g if k not in strip} <= set(w)
    if arm == "latency":
        assert not backend.asked and all(r["weight"] == pytest.approx(1 / r["n_moves"])
                                         for r in rows if r["kind"] == "candidate")
    else:
        assert backend.asked and backend.asked[0][1] is True  # the base is always probed


def test_evidence_steers_moves_on_recorded_answers(recorded: list[Path]) -> None:
    """matmul's recorded base evidence (a tensor-core kernel whose pipelined loads hide more
    than its whole duration) weights stage and tile moves up against warps."""
    kdir = recorded[0] / "matmul"
    ev_row = next(r for r in log_rows(kdir) if r["kind"] == "evidence")
    mod = harness.load("matmul")
    store = EvidenceStore(kdir / "store.duckdb", harness.KERNELS_DIR / "matmul.py")
    try:
        base = next(r for r in log_rows(kdir) if r["kind"] == "base" and r["arm"] == "evidence")
        ev = Evidence(static=store.static(ev_row["version"]), duration_ns=base["duration_ns"],
                      exposed=store.exposed(ev_row["version"], mod.KERNEL, mod.LOAD_REGION))
    finally:
        store.close()
    assert ev.static is not None and ev.static.sufficient and ev.static.tensor > 0
    assert ev.exposed is not None and ev.exposed.above_noise
    frac = ev.exposed_fraction()
    assert frac is not None and frac > 0.10
    cands = harness.moves(mod.SPACE, mod.BASE)
    w = {m.category: x for m, x in zip(cands, weights(cands, ev, mod.LOAD_REGION), strict=True)}
    assert w["stages"] == 3.0 and w["tile"] == 3.0 and w["warps"] == 1.0
    assert weights(cands, None, mod.LOAD_REGION) == [1.0] * len(cands)
