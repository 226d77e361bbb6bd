"""One optimizer, two arms: a seeded local search over one-step moves, charged in GPU seconds.

Both arms run the same loop with the same random stream (seeded by kernel and seed):

1. measure the base configuration (charged);
2. list the one-step moves from the incumbent to configurations not yet visited (none left: a
   jump to a random unvisited configuration);
3. draw one move with ``random.choices(moves, weights)``: the **latency arm**'s weights are all
   1; the **evidence arm**'s come from :func:`weights` over what the store answers about the
   incumbent (so with no usable evidence both arms draw alike);
4. measure the candidate (compile not charged; the timed launches and the result check
   charged); accept it when its clean duration is below the incumbent's by more than
   ``ACCEPT`` (1 %) and its result is within the kernel's tolerance;
5. the evidence arm, when the incumbent changed, buys evidence about it: the static listing
   (no GPU time) always, and a forced-wait probe of the load region (charged: one timed
   variant) for the base and after a move that can change how loads overlap (stages, tiles,
   vector hints, masks, loop schedule); after a warps-only move it keeps the last probe's
   answer.

The loop runs until the GPU budget is spent **and** the fixed number of trials is reached (or
the cap), so one run answers both settings: the budgeted result is the best candidate whose
measurement ended within the budget (evidence included), the fixed-trial result the best of
the first ``trials`` candidates, evidence free, as the seed's comparison had it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from experiments.ab.evidence import Exposed, Static
from experiments.ab.harness import Config, Move, jump, key, moves

ACCEPT = 0.01
MEMORY_MOVES = frozenset({"stages", "tile", "vector", "mask", "schedule"})


@dataclass
class Evidence:
    """What the evidence arm knows about its incumbent."""

    static: Static | None = None
    exposed: Exposed | None = None
    duration_ns: float | None = None

    def exposed_fraction(self) -> float | None:
        if self.exposed is None or not self.duration_ns:
            return None
        return self.exposed.value_ns / self.duration_ns


def weights(cands: Sequence[Move], ev: Evidence | None, load_region: str) -> list[float]:
    """The evidence arm's move weights (all 1 without evidence). Rules, multiplicative:

    - static evidence, only when sufficient (at most 5 % of instructions without a region):
      tensor-core instructions present -> tiles x2; SHFL/BAR above 8 % of instructions (a
      reduction- or barrier-heavy kernel) -> warps x2, tiles x1.5; half or more of the load
      region's global loads predicated -> masks x2; the load region above 25 % of the
      instructions (address arithmetic dominates) -> vector hints x2, tiles x1.5;
    - exposed latency of the load region (derived from the forced-wait variant): above noise
      and at least 10 % of the duration -> stages x3, vector hints x2, tiles x1.5; below noise
      or under 3 % -> stages x0.25, vector hints x0.5 (nothing to hide).
    """
    mult: dict[str, float] = {}

    def scale(cat: str, f: float) -> None:
        mult[cat] = mult.get(cat, 1.0) * f

    if ev is not None and ev.static is not None and ev.static.sufficient:
        st = ev.static
        if st.tensor > 0:
            scale("tile", 2.0)
        if st.total and st.sync / st.total > 0.08:
            scale("warps", 2.0)
            scale("tile", 1.5)
        gl = st.global_loads.get(load_region, 0.0)
        if gl > 0 and st.predicated_loads.get(load_region, 0.0) >= gl / 2:
            scale("mask", 2.0)
        if st.share(load_region) > 0.25:
            scale("vector", 2.0)
            scale("tile", 1.5)
    frac = ev.exposed_fraction() if ev is not None else None
    if ev is not None and ev.exposed is not None and frac is not None:
        if ev.exposed.above_noise and frac >= 0.10:
            scale("stages", 3.0)
            scale("vector", 2.0)
            scale("tile", 1.5)
        elif not ev.exposed.above_noise or frac < 0.03:
            scale("stages", 0.25)
            scale("vector", 0.5)
    return [mult.get(m.category, 1.0) for m in cands]


@dataclass
class Result:
    """One measurement as the optimizer sees it."""

    ok: bool                  # compiled, launched and within tolerance
    duration_ns: float | None
    charged_s: float          # GPU seconds charged to the arm
    compile_s: float
    version: str | None
    rel_err: float | None = None
    note: str = ""
    run_id: str | None = None  # the timing run in the store


class Backend(Protocol):
    """What the search needs from the measuring side (GPU or the CPU dry mode)."""

    def measure(self, cfg: Config, parent: str | None, move: str | None) -> Result: ...

    def evidence(self, version: str, cfg: Config, duration_ns: float | None,
                 buy_probe: bool) -> tuple[Evidence, float, float]:
        """(evidence, charged GPU s, compile s) for an incumbent."""
        ...


def search(kernel: str, space: dict[str, list[int]], base: Config, arm: str, seed: int,
           budget_s: float, trials: int, cap: int, backend: Backend,
           load_region: Callable[[Config], str],
           log: Callable[[dict[str, Any]], None]) -> list[dict[str, Any]]:
    """Run one arm on one kernel with one seed; every step is logged and returned."""
    rng = random.Random(f"{kernel}/{seed}")
    steps: list[dict[str, Any]] = []
    spent = 0.0

    def record(kind: str, **kw: Any) -> dict[str, Any]:
        row = {"kernel": kernel, "arm": arm, "seed": seed, "kind": kind, "step": len(steps),
               "budget_s": budget_s, **kw}
        steps.append(row)
        log(row)
        return row

    res = backend.measure(base, None, None)
    spent += res.charged_s
    if not res.ok or res.duration_ns is None:
        record("base", cfg=base, ok=False, note=res.note, charged_s=res.charged_s,
               spent_s=spent, compile_s=res.compile_s)
        return steps
    record("base", cfg=base, ok=True, duration_ns=res.duration_ns, version=res.version,
           run_id=res.run_id,
           charged_s=res.charged_s, spent_s=spent, compile_s=res.compile_s, rel_err=res.rel_err,
           accepted=True, candidate=0)
    inc_cfg, inc_dur, inc_ver = dict(base), res.duration_ns, res.version
    visited = {key(base)}
    ev: Evidence | None = None
    stale_probe, last_move_cat = True, ""
    prev_exposed: Exposed | None = None
    n = 0
    all_cfgs = _all(space)
    while (spent < budget_s or n < trials) and n < cap:
        if arm == "evidence" and ev is None and inc_ver is not None:
            buy = stale_probe or last_move_cat in MEMORY_MOVES
            ev_new, cost, comp = backend.evidence(inc_ver, inc_cfg, inc_dur, buy)
            if not buy and prev_exposed is not None:
                ev_new.exposed = prev_exposed
            spent += cost
            ev = ev_new
            stale_probe = False
            record("evidence", cfg=inc_cfg, version=inc_ver, charged_s=cost, spent_s=spent,
                   compile_s=comp, probe=buy, **_describe(ev, load_region(inc_cfg)))
        cands = [m for m in moves(space, inc_cfg) if key(m.cfg()) not in visited]
        if not cands:
            left = [c for c in all_cfgs if key(c) not in visited]
            if not left:
                break
            cands = [jump(inc_cfg, rng.choice(left))]
        w = weights(cands, ev if arm == "evidence" else None, load_region(inc_cfg))
        mv = rng.choices(cands, weights=w, k=1)[0]
        cfg = mv.cfg()
        visited.add(key(cfg))
        n += 1
        res = backend.measure(cfg, inc_ver, f"move:{mv.name}")
        spent += res.charged_s
        better = (res.ok and res.duration_ns is not None
                  and res.duration_ns < inc_dur * (1 - ACCEPT))
        record("candidate", cfg=cfg, move=mv.name, category=mv.category, parent=inc_ver,
               ok=res.ok, note=res.note, duration_ns=res.duration_ns, version=res.version,
               run_id=res.run_id,
               charged_s=res.charged_s, spent_s=spent, compile_s=res.compile_s,
               rel_err=res.rel_err, accepted=better, candidate=n,
               weight=w[cands.index(mv)] / sum(w), n_moves=len(cands))
        if better:
            assert res.duration_ns is not None
            inc_cfg, inc_dur, inc_ver = cfg, res.duration_ns, res.version
            prev_exposed = ev.exposed if ev is not None else None
            ev, last_move_cat = None, mv.category
    return steps


def _describe(ev: Evidence, region: str) -> dict[str, Any]:
    st = ev.static
    out: dict[str, Any] = {"load_region": region}
    if st is not None:
        out.update(static_sufficient=st.sufficient, unattributed_share=st.unattributed_share,
                   entropy_bits=st.entropy_bits, load_share=st.share(region),
                   tensor=st.tensor, sync_share=st.sync / st.total if st.total else None,
                   regions=st.regions)
    if ev.exposed is not None:
        out.update(exposed_ns=ev.exposed.value_ns, exposed_above_noise=ev.exposed.above_noise,
                   exposed_fraction=ev.exposed_fraction())
    return out


def _all(space: dict[str, list[int]]) -> list[Config]:
    import itertools

    knobs = sorted(space)
    return [dict(zip(knobs, vals, strict=True))
            for vals in itertools.product(*(space[k] for k in knobs))]
