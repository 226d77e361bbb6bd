"""The benchmark's argusdb store: candidates in, answers out (Python API only).

Every candidate is ingested as a program version of its kernel file with its configuration,
the GPU target and its lineage (``arm``, ``seed``) as options, bound to its parent version by
the move that made it (``move:<knob>:<old>-><new>``). What an arm reads back comes from checked
queries (:meth:`argusdb.api.Connection.query`): the clean duration (both arms) and, for the
evidence arm, the static instruction share per region (nvdisasm listing + TTGIR call sites,
shared library lines split equally between their regions), the share that could not be placed
in any region (the "insufficient" verdict above 5 %, the threshold of ``argus report``), the
association entropy of shared lines, and the exposed latency a forced-wait variant derived.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from argusdb.api import Connection, checked, connect
from argusdb.collectors.regions import ProgramSource
from argusdb.ingest import ingest_paths
from argusdb.ingest.variants import VariantOf, record_check
from argusdb.schema.sqltext import literal

#: Above this share of a kernel's instructions with no region, the static evidence is
#: insufficient (the threshold ``argus report --max-unattributed`` uses by default).
MAX_UNATTRIBUTED = 0.05

_HEX = re.compile(r"^[0-9a-f]{8,64}$")
_REGION = re.compile(r"^[A-Za-z0-9_./-]+$")


def _lit(value: str, pattern: re.Pattern[str]) -> str:
    if not pattern.match(value):
        raise ValueError(f"unexpected identifier {value!r}")
    return literal(value)


@dataclass
class Static:
    """Static per-region instruction evidence of one version (no GPU time)."""

    regions: dict[str, float]            # region name -> instructions (shared lines split)
    global_loads: dict[str, float]       # region name -> global load instructions
    predicated_loads: dict[str, float]   # region name -> predicated global loads (@P LDG)
    tensor: float                        # HGMMA/HMMA instructions in the kernel
    sync: float                          # SHFL/BAR instructions (reductions, barriers)
    total: float
    unattributed_share: float
    entropy_bits: float                  # instruction-weighted entropy of the line splits

    @property
    def sufficient(self) -> bool:
        return self.total > 0 and self.unattributed_share <= MAX_UNATTRIBUTED

    def share(self, region: str) -> float:
        return self.regions.get(region, 0.0) / self.total if self.total else 0.0


@dataclass
class Exposed:
    """Exposed latency of a region (derived from a forced-wait variant), ns."""

    region: str
    value_ns: float
    above_noise: bool


@dataclass
class EvidenceStore:
    """One store file for one kernel: both arms, every seed."""

    path: Path
    program: Path
    conn: Connection = field(init=False)

    def __post_init__(self) -> None:
        self.conn = connect(self.path, create=True)
        self.src = ProgramSource.from_path(self.program)
        self.prefix = f"{self.src.stem}"

    def close(self) -> None:
        self.conn.close()

    def ingest(self, paths: list[Path], options: dict[str, str], parent: str | None,
               transform: str | None, program: ProgramSource | None = None) -> str:
        """Ingest one compile's artefacts (and its timing) as one version; its ID."""
        variant = VariantOf(parent, transform) if parent and transform else None
        res = ingest_paths(self.conn.store, [str(p) for p in paths], program or self.src,
                           options, variant)
        checked.refresh_metadata(self.conn.store)
        versions = {r.program_version for r in res}
        assert len(versions) == 1, versions
        #: The run of each artefact ingested last (a timing's run is its own measurement).
        self.last_runs = {str(p): r.run_id for p, r in zip(paths, res, strict=True)}
        return versions.pop()

    def check(self, variant: str, parent: str, rel_err: float, tol: float) -> bool:
        return record_check(self.conn.store, variant, parent, rel_err, tol)

    def duration_ns(self, version: str, kernel: str, run_id: str | None = None
                    ) -> float | None:
        """Median clean duration of the kernel in one timing run of this version (all of its
        timing runs when ``run_id`` is None)."""
        region = f"{self.prefix}/{kernel}"
        run = "" if run_id is None else f" AND run_id = {_lit(run_id, _HEX)}"
        rows = self.conn.query(
            "SELECT median(value) AS d FROM evidence WHERE signal = 'duration' "
            "AND evidence_class = 'observed' AND program_version = "
            f"{_lit(version, _HEX)} AND region_id = {_lit(region, _REGION)}{run}").to_pylist()
        d = rows[0]["d"] if rows else None
        return None if d is None else float(d)

    def static(self, version: str) -> Static:
        rows = self.conn.query(f"""
            WITH ins AS (
                SELECT r.program_version, i.kernel, i.source_file, i.source_line, i.sass
                FROM instruction AS i JOIN run AS r USING (run_id)
                WHERE r.program_version = {_lit(version, _HEX)}
            )
            SELECT coalesce(l.region_id, '_unattributed') AS region,
                   sum(1.0 / coalesce(l.n_regions, 1)) AS n,
                   sum(CASE WHEN coalesce(l.n_regions, 1) > 1
                            THEN log2(l.n_regions) / l.n_regions ELSE 0 END) AS bits,
                   sum(CASE WHEN regexp_matches(i.sass, '\\b(LDG|LDGSTS|UTMALDG)')
                            THEN 1.0 / coalesce(l.n_regions, 1) ELSE 0 END) AS gload,
                   sum(CASE WHEN regexp_matches(i.sass, '@!?U?P[0-9T].*\\b(LDG|LDGSTS)')
                            THEN 1.0 / coalesce(l.n_regions, 1) ELSE 0 END) AS pload,
                   sum(CASE WHEN regexp_matches(i.sass, '\\b(HGMMA|HMMA)')
                            THEN 1.0 / coalesce(l.n_regions, 1) ELSE 0 END) AS tensor,
                   sum(CASE WHEN regexp_matches(i.sass, '\\b(SHFL|BAR)')
                            THEN 1.0 / coalesce(l.n_regions, 1) ELSE 0 END) AS sync
            FROM ins AS i
            LEFT JOIN attribution_line_region AS l
              ON l.program_version = i.program_version AND l.kernel = i.kernel
             AND l.source_file = i.source_file AND l.source_line = i.source_line
            GROUP BY ALL""").to_pylist()
        regions: dict[str, float] = {}
        gload: dict[str, float] = {}
        pload: dict[str, float] = {}
        tensor = sync = bits = 0.0
        unattributed = 0.0
        for r in rows:
            name = str(r["region"]).rsplit("/", 1)[-1]
            if name == "_unattributed":
                unattributed += float(r["n"])
            regions[name] = regions.get(name, 0.0) + float(r["n"])
            gload[name] = float(r["gload"])
            pload[name] = float(r["pload"])
            tensor += float(r["tensor"])
            sync += float(r["sync"])
            bits += float(r["bits"])
        total = sum(regions.values())
        return Static(regions, gload, pload, tensor, sync, total,
                      unattributed / total if total else 1.0,
                      bits / total if total else 0.0)

    def exposed(self, version: str, kernel: str, region: str) -> Exposed | None:
        rid = f"{self.prefix}/{kernel}/{region}"
        rows = self.conn.query(
            "SELECT median(value) AS v, bool_and(coalesce(json_extract_string(lineage, "
            "'$.conditions.above_noise') = 'true', false)) AS n "
            "FROM evidence WHERE signal = 'exposed_latency' AND evidence_class = 'derived' "
            f"AND program_version = {_lit(version, _HEX)} AND region_id = {_lit(rid, _REGION)}"
        ).to_pylist()
        if not rows or rows[0]["v"] is None:
            return None
        v = float(rows[0]["v"])
        return Exposed(region, v, bool(rows[0]["n"]) and math.isfinite(v))

    def versions(self) -> list[dict[str, Any]]:
        return self.conn.query(
            "SELECT program_version, parent_version, transform FROM program_version "
            "ORDER BY program_version").to_pylist()
