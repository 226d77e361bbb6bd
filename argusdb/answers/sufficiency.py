"""Whether the evidence holds what an answer claims: the gaps every answer surface shows.

Report, diff, trajectory, dashboard and the MCP tools judge a claim with the same
:class:`Coverage`. A claim about a region is **insufficient** (never "sufficient, entropy 0")
when any of these gaps touches it:

- ``unattributed``: the region's value is attributed, and more than ``max_unattributed``
  (default :data:`MAX_UNATTRIBUTED_SHARE` = 5 %) of the kernel's attributable total of that
  signal, in the claim's runs, went to ``<program>/<kernel>/_unattributed`` (lines with no
  region): the region's share is then a share of what could be placed, not of the kernel;
- ``call_sites``: the version's instruction-level evidence has lines in library code (e.g.
  ``standard.py`` reductions) but the version has no inlining call sites (no TTGIR of the same
  compile was ingested), so those instructions could not reach any region and went to
  ``_unattributed``; named as the cause next to an ``unattributed`` gap (a library share
  within the threshold, e.g. 0.1 % of matmul's instructions, leaves the claim sufficient
  with its share shown);
- ``entropy``: (diff and trajectory; the report judges it in its verdict) the attributed
  value's association entropy is above ``max_entropy`` (default 0.5 bit): code shared between
  regions, split by execution counts;
- ``scope``: a measurement plan (``argus observe --scope``) asked for a scope coordinate per
  instance (``loop_iter=each``, ``warp_role=each``, an index) and the claim's values came back
  over the whole coordinate (``'all'``).

A question with no evidence at all is answered by :class:`argusdb.errors.NoEvidence`, naming
the ``argus observe`` request that would produce it (see :func:`observe_request`).

Example:
    >>> observe_request("softmax/softmax_fwd/load", ["inst_executed"])
    'argus observe softmax.py --region softmax/softmax_fwd/load --signals inst_executed'
    >>> with argusdb.connect("argus.duckdb", read_only=True) as db:
    ...     share = Coverage(db).unattributed_share("softmax/softmax_fwd", "ee0369be2e320607",
    ...                                             "inst_executed")
    >>> 0 <= share < 0.05
    True
"""

from __future__ import annotations

import difflib
import json
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from argusdb.answers import MAX_ENTROPY_BITS as _MAX_ENTROPY_BITS
from argusdb.answers.format import percent
from argusdb.answers.format import share as share_text
from argusdb.answers.select import lit
from argusdb.errors import ArgusError, NoEvidence, QueryRefused, UsageError
from argusdb.schema.shape import INTRA_KERNEL_SCOPE

if TYPE_CHECKING:
    import pyarrow as pa
    from sqlglot import exp

    from argusdb.api import Connection

#: Default share of a kernel's attributable total in ``_unattributed`` above which an
#: attributed claim about one of its regions is insufficient.
MAX_UNATTRIBUTED_SHARE = 0.05
#: Default association entropy (bits) above which an attributed claim is insufficient.
MAX_ENTROPY_BITS = _MAX_ENTROPY_BITS

#: Scope coordinates a plan may ask per instance (``launch`` is the repeat axis, not a scope).
_ASKED = INTRA_KERNEL_SCOPE


@dataclass(frozen=True)
class Gap:
    """One reason a claim rests on less evidence than it states.

    Attributes:
        kind: ``unattributed``, ``call_sites`` or ``scope``.
        message: what is missing, with the figures.
        remedy: what would close the gap (an ``argus ingest`` / ``argus observe`` command).
        share: the ``_unattributed`` share (0..1) for ``unattributed``, else None.
    """

    kind: str
    message: str
    remedy: str
    share: float | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def observe_request(region: str, signals: list[str] | str,
                    scope: dict[str, str] | None = None, source: str | None = None) -> str:
    """The ``argus observe`` command that would collect ``signals`` of ``region``."""
    sig = signals if isinstance(signals, str) else ",".join(signals)
    src = source or f"{region.split('/', 1)[0]}.py"
    scopes = "".join(f" --scope {k}={v}" for k, v in sorted((scope or {}).items()))
    return f"argus observe {src} --region {region} --signals {sig}{scopes}"


class Coverage:
    """Gaps of claims, read once per program version through the checked query surface."""

    def __init__(self, db: Connection, max_unattributed: float = MAX_UNATTRIBUTED_SHARE,
                 max_entropy: float = MAX_ENTROPY_BITS) -> None:
        self.db = db
        self.max_unattributed = max_unattributed
        self.max_entropy = max_entropy
        #: Per version: its attributed totals per run, grouped by (kernel, signal).
        self._totals: dict[str, dict[tuple[str, str], list[dict[str, Any]]]] = {}
        self._library: dict[str, tuple[list[str], int, str | None]] = {}
        self._plans: dict[str, list[dict[str, Any]]] = {}

    # -- reads (one query each per version) -------------------------------------------------
    def _attributed_totals(self, version: str, kernel: str, signal: str
                           ) -> list[dict[str, Any]]:
        """The version's per-run attributed totals of ``kernel``'s ``signal`` (one query per
        version, grouped once: a diff of N signals looks each up, not N scans)."""
        if version not in self._totals:
            by: dict[tuple[str, str], list[dict[str, Any]]] = {}
            for r in _read(
                self.db, f"SELECT run_id, kernel, signal, "
                f"sum(value) FILTER (WHERE ends_with(region_id, '/_unattributed')) "
                f"AS unattributed, sum(value) AS total FROM evidence "
                f"WHERE program_version = {lit(version)} AND evidence_class = 'attributed' "
                f"GROUP BY run_id, kernel, signal"):
                if r["kernel"] is None or r["signal"] is None:
                    continue  # matches no region's kernel
                by.setdefault((str(r["kernel"]), str(r["signal"])), []).append(r)
            self._totals[version] = by
        return self._totals[version].get((kernel, signal), [])

    def _library_lines(self, version: str) -> tuple[list[str], int, str | None]:
        """(library files with instruction-level evidence, call sites, the program's file)."""
        if version not in self._library:
            meta = _read(self.db, f"SELECT source_name FROM program_version WHERE "
                                  f"program_version = {lit(version)}")
            own = meta[0]["source_name"] if meta else None
            files = [str(r["source_file"]) for r in _read(
                self.db, f"SELECT DISTINCT source_file FROM evidence WHERE program_version = "
                f"{lit(version)} AND evidence_class = 'observed' AND source_file IS NOT NULL "
                f"ORDER BY source_file")]
            sites = _read(
                self.db, f"SELECT count(*) AS n FROM inline_site WHERE run_id IN "
                f"(SELECT run_id FROM run WHERE program_version = {lit(version)})")
            self._library[version] = ([f for f in files if f != own],
                                      int(sites[0]["n"]) if sites else 0, own)
        return self._library[version]

    def _plan_scopes(self, version: str) -> list[dict[str, Any]]:
        if version not in self._plans:
            self.read_plans([version])
        return self._plans[version]

    def plans_of_rows(self, rows: pa.Table) -> None:
        """Take the plans of ``rows`` (:func:`~argusdb.answers.select.fetch_table` with
        ``plans=True``) as their versions' plans, without another query: every claim judged
        later rests on runs of these rows, and :meth:`gaps` reads only the plans of a claim's
        runs."""
        import pyarrow.compute as pc

        cols = ("plan_id", "plan_region_id", "plan_signals", "plan_scope", "run_id",
                "program_version")
        # every version of the rows, in order of first appearance; then the rows with a plan
        seen: dict[str, dict[tuple[Any, ...], None]] = {
            str(v): {} for v in pc.unique(rows.column("program_version")).to_pylist()}
        planned = rows.filter(pc.is_valid(rows.column("plan_id")))
        for plan, region, signals, scope, run, version in zip(
                *(planned.column(c).to_pylist() for c in cols), strict=True):
            seen[str(version)][(plan, region, signals, scope, run)] = None
        for version, found in seen.items():
            if version not in self._plans:
                self._plans[version] = [
                    {"plan_id": p, "region_id": g, "signals": s, "scope": c, "run_id": r}
                    for p, g, s, c, r in found]

    def read_plans(self, versions: list[str]) -> None:
        """Read the measurement plans of several versions in one query (an answer about two
        versions asks once, not once per version)."""
        want = sorted({v for v in versions if v not in self._plans})
        if not want:
            return
        rows = _read(
            self.db, f"SELECT p.plan_id, p.region_id, p.signals, p.scope, r.run_id, "
            f"r.program_version FROM plan AS p JOIN task AS t ON t.plan_id = p.plan_id "
            f"JOIN run AS r ON r.task_id = t.task_id "
            f"WHERE r.program_version IN ({', '.join(lit(v) for v in want)})")
        for v in want:
            self._plans[v] = [r for r in rows if r["program_version"] == v]

    # -- judgement ---------------------------------------------------------------------------
    def unattributed_share(self, region: str, version: str, signal: str,
                           runs: list[str] | None = None) -> float | None:
        """Share (0..1) of the region's kernel's attributable ``signal`` that went to
        ``_unattributed`` in ``runs`` (default all runs of the version); None when the kernel
        has no attributed evidence of that signal."""
        parts = region.split("/")
        if len(parts) < 2:
            return None
        wanted = set(runs or ())
        rows = [r for r in self._attributed_totals(version, parts[1], signal)
                if not wanted or r["run_id"] in wanted]
        total = sum(abs(float(r["total"] or 0.0)) for r in rows)
        if not rows or total == 0:
            return None
        return sum(abs(float(r["unattributed"] or 0.0)) for r in rows) / total

    def gaps(self, region: str, version: str, signal: str, evidence_class: str,
             scope: dict[str, str], runs: list[str], entropy: float | None = None) -> list[Gap]:
        """The gaps of one claim (empty when the evidence holds what it states).

        ``entropy`` (the claim's association entropy) is judged when given; the report passes
        None because its verdict judges entropy itself.
        """
        out: list[Gap] = []
        program = region.split("/", 1)[0]
        if evidence_class == "attributed" and entropy is not None \
                and entropy > self.max_entropy:
            out.append(Gap(
                "entropy",
                f"rests on high-entropy attribution: {entropy:.3f} bits > {self.max_entropy} "
                f"bits (code shared between regions, split by execution counts)",
                "ask about the regions that share the code together (their parent region), or "
                "restructure the kernel so each region owns its instructions"))
        if evidence_class == "attributed":
            share = self.unattributed_share(region, version, signal, runs)
            kernel = "/".join(region.split("/")[:2])
            if share is not None and region.endswith("/_unattributed"):
                # the region is the kernel's unplaced lines themselves: not a region of the
                # source, whatever its share (which may be far below the threshold)
                out.append(Gap(
                    "unattributed",
                    f"{kernel}/_unattributed is not a region of the source: it holds "
                    f"{share_text(share)} of {kernel}'s {signal}, on lines no region marker "
                    f"covers",
                    f"ask about the regions of {kernel}, or put a '# region NAME' marker above "
                    f"those lines and ingest again", share))
            elif share is not None and share > self.max_unattributed:
                out.append(Gap(
                    "unattributed",
                    f"{percent(share, 1)} of {kernel}'s {signal} went to {kernel}/_unattributed "
                    f"(lines with no region), above the {percent(self.max_unattributed, 0)} "
                    f"threshold: "
                    f"this region's value is a share of what could be placed, not of the "
                    f"kernel",
                    f"ingest the TTGIR (and SASS) of the same compile with the same --program "
                    f"(argus ingest STORE x.source.csv x.sass x.ttgir --program {program}.py), "
                    f"or re-observe: {observe_request(region, signal)}", share))
            library, sites, own = self._library_lines(version)
            if library and sites == 0 and out:
                out.append(Gap(
                    "call_sites",
                    f"version {version} has instructions in library code ({', '.join(library)})"
                    f" but no inlining call sites: no TTGIR of the compile was ingested, so "
                    f"those instructions reach no region of {own or program + '.py'}",
                    f"ingest the kernel's TTGIR with --program {own or program + '.py'} "
                    f"(argus ingest STORE x.ttgir --program {own or program + '.py'})", share))
        for plan in self._plan_scopes(version):
            if plan["run_id"] not in runs or plan["region_id"] != region:
                continue
            signals = _json(plan["signals"]) or []
            if signal not in signals and not (signal == "scope_cycles"
                                              and "duration" in signals):
                continue
            asked = {k: str(v) for k, v in (_json(plan["scope"]) or {}).items()
                     if k in _ASKED and str(v) != "all"}
            missing = {k: v for k, v in asked.items() if scope.get(k, "all") == "all"}
            if missing:
                want = ", ".join(f"{k}={v}" for k, v in sorted(missing.items()))
                out.append(Gap(
                    "scope",
                    f"plan {plan['plan_id']} asked for scope {want}, but the values came back "
                    f"over the whole coordinate ({', '.join(f'{k}=all' for k in missing)})",
                    "the collectors of this plan cannot resolve that coordinate; ask for a "
                    "scope the planner can deliver (argus observe --dry-run shows the plan)"))
        # One gap per kind and message (several plans may ask the same scope).
        return list(dict.fromkeys(out))


def _json(v: Any) -> Any:
    if isinstance(v, str):
        try:
            return json.loads(v)
        except ValueError:
            return None
    return v


def insufficient_reason(gaps: list[Gap]) -> str:
    """One sentence for a verdict from a claim's gaps."""
    return "; ".join(f"{g.message} (remedy: {g.remedy})" for g in gaps)


def missing(db: Connection, region: str, signals: list[str] | None = None,
            version: str | None = None) -> ArgusError:
    """The error for a question about ``region`` that no stored row answers.

    :class:`NoEvidence` (with the ``argus observe`` request) when the region is declared by a
    stored program version; a :class:`UsageError` with close matches when no version declares
    it (a misspelt region).
    """
    rows = _read(db, f"SELECT DISTINCT v.source_name FROM region_span AS s JOIN program_version "
                     f"AS v ON v.program_version = s.program_version WHERE s.region_id = "
                     f"{lit(region)} ORDER BY 1")
    if not rows:
        known = [str(r["region_id"]) for r in _read(
            db, "SELECT DISTINCT region_id FROM region_span ORDER BY 1")]
        close = difflib.get_close_matches(region, known, n=3, cutoff=0.6)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else (
            "; list regions with 'argus regions STORE'")
        return UsageError(f"region {region!r} is declared by no program version of this "
                          f"store{hint}")
    source = str(rows[0]["source_name"] or "") or None
    if signals:
        # the planner's signal grammar loads only for a question that found nothing
        from argusdb.errors import PlanError
        from argusdb.schema.signals import parse_signal

        stored = {str(r["signal"]) for r in _read(db, "SELECT DISTINCT signal FROM evidence")}
        for sig in signals:
            if sig in stored:
                continue
            try:
                parse_signal(sig)
            except PlanError as exc:  # not a signal anything could observe: a misspelling
                return UsageError(str(exc))
    what = f"region {region!r}"
    if signals:
        what += f" has no {', '.join(signals)} evidence"
    else:
        what += " has no evidence"
    if version:
        what += f" in version {version}"
    reqs = [observe_request(region, signals or ["duration"], source=source)]
    return NoEvidence(what, reqs)


def did_you_mean(name: str, known: list[str], what: str = "signal") -> UsageError:
    """A UsageError for an unknown ``name`` with the closest known ones."""
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    hint = (f"did you mean {' or '.join(repr(c) for c in close)}?" if close
            else f"known: {', '.join(known[:12]) or 'none'}")
    return UsageError(f"{what} {name!r} is not in this store; {hint}")


def _literals(tree: exp.Expr, column: str) -> set[str]:
    """String literals the query compares ``column`` with (``=`` and ``IN``)."""
    from sqlglot import exp

    out: set[str] = set()
    for eq in tree.find_all(exp.EQ):
        for col, val in ((eq.left, eq.right), (eq.right, eq.left)):
            if isinstance(col, exp.Column) and col.name == column \
                    and isinstance(val, exp.Literal) and val.is_string:
                out.add(val.this)
    for inn in tree.find_all(exp.In):
        if isinstance(inn.this, exp.Column) and inn.this.name == column:
            out.update(v.this for v in inn.expressions
                       if isinstance(v, exp.Literal) and v.is_string)
    return out


def empty_answer(db: Connection, sql: str, table: pa.Table) -> ArgusError | None:
    """Why a checked query over ``evidence`` came back empty (no rows, or one row of NULLs,
    e.g. ``median(value)`` over nothing), when the reason is that the store has no evidence of
    a region (and signal) the query names; None when the answer stands as it is.

    Returns :class:`NoEvidence` with the ``argus observe`` request, or a did-you-mean
    :class:`UsageError` for a region no version declares.
    """
    if table.num_rows > 1 or (table.num_rows == 1 and any(
            v is not None for v in table.to_pylist()[0].values())):
        return None
    import sqlglot  # only an empty answer is parsed (the checker's parser)
    from sqlglot import exp

    try:
        tree = sqlglot.parse_one(sql, read="duckdb")
    except sqlglot.errors.ParseError:
        return None
    if not any(t.name == "evidence" for t in tree.find_all(exp.Table)):
        return None
    signals = sorted(_literals(tree, "signal"))
    for region in sorted(_literals(tree, "region_id")):
        where = f"region_id = {lit(region)}" + (
            f" AND signal IN ({', '.join(lit(s) for s in signals)})" if signals else "")
        found = _read(db, f"SELECT program_version, count(*) AS n FROM evidence WHERE {where} "
                          f"GROUP BY program_version")
        if not found:
            return missing(db, region, signals or None)
    return None


def _read(db: Connection, sql: str) -> list[dict[str, Any]]:
    """Rows of one of this module's fixed, per-version reads, through the checked surface.

    These are argusdb's own questions (one version, grouped by run; or metadata tables), not
    user queries: if a future checker rule refuses one, the same SQL is read from the store
    directly rather than leaving the answer without its sufficiency judgement.
    """
    try:
        return list(db.query(sql).to_pylist())
    except QueryRefused:
        return db.store.rows(sql)
