"""Ingest the artefacts of one multi-process launch: every rank's files as runs of one group.

A launch is a folder (or list of files) holding one artefact per rank per collector, e.g.
``tp_block.rank0.spans.jsonl`` and ``tp_block.rank1.spans.jsonl``. Each becomes a run with its
rank, world size, device and the launch group, all in one transaction; the ranks are checked
(each rank 0..N-1 once per artefact kind, one world size) before anything is written.

Example:
    >>> with open_store("argus.duckdb", create=True) as st:
    ...     ingest_launch(st, "out/xl-overlap-events-1",  # doctest: +SKIP
    ...                   launch_group="xl-overlap-events-1")
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from argusdb.collectors import detect
from argusdb.collectors.regions import ProgramSource
from argusdb.errors import InputError
from argusdb.ingest import IngestResult, ingest_paths
from argusdb.store.embedded import Store


@dataclass
class LaunchResult:
    """What one launch's ingest wrote."""

    launch_group: str
    world_size: int
    runs: list[IngestResult] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"launch_group": self.launch_group, "world_size": self.world_size,
                "runs": [r.to_json() for r in self.runs]}


def _files(paths: str | Path | Sequence[str | Path]) -> list[Path]:
    items = [paths] if isinstance(paths, str | Path) else list(paths)
    out: list[Path] = []
    for p in map(Path, items):
        if p.is_dir():
            out.extend(sorted(f for f in p.iterdir() if f.is_file()
                              and (f.name.endswith((".spans.jsonl", ".spans.jsonl.gz",
                                                    ".json.gz", ".json"))
                                   and not f.name.startswith("result."))))
        else:
            out.append(p)
    return out


def ingest_launch(store: Store, paths: str | Path | Sequence[str | Path],
                  program: ProgramSource | None = None, options: dict[str, str] | None = None,
                  launch_group: str | None = None, task_id: str | None = None,
                  world_size: int | None = None) -> LaunchResult:
    """Ingest every rank's artefacts of one launch as runs of one launch group.

    ``world_size``, when given, is the number of ranks the launch must have.

    ``task_id`` binds the runs to the plan task that launched them (``argus observe``).

    Raises:
        InputError: no artefact, an artefact without a rank, ranks missing or repeated, world
            sizes or launch groups that disagree; nothing is written then.
    """
    files = _files(paths)
    if not files:
        raise InputError(str(paths), "holds no rank artefacts (*.spans.jsonl, Kineto traces)",
                         "pass the folder the launch wrote (ARGUS_DIST_OUT)")
    seen: dict[tuple[str, int], Path] = {}
    worlds: set[int] = set()
    groups: set[str] = set()
    for f in files:
        art = detect(f).read(f)
        rank, world = art.launch.get("rank"), art.launch.get("world_size")
        if rank is None or world is None:
            raise InputError(str(f), "does not state its rank and world size",
                             "record it with argusdb.observe.launch.recorder "
                             "(ARGUS_DIST_MODE) or a torch.distributed program profiled after "
                             "init_process_group")
        if (art.kind, rank) in seen:
            raise InputError(str(f), f"is a second {art.kind} of rank {rank} (first: "
                             f"{seen[(art.kind, rank)].name})", "pass one launch at a time")
        seen[(art.kind, rank)] = f
        worlds.add(int(world))
        if art.launch.get("launch_group"):
            groups.add(str(art.launch["launch_group"]))
    if len(worlds) != 1:
        raise InputError(str(paths), f"mixes world sizes {sorted(worlds)}",
                         "pass the artefacts of one launch")
    world = worlds.pop()
    if world_size is not None and world != world_size:
        raise InputError(str(paths), f"was launched with {world} ranks, not {world_size}",
                         f"pass a launch of {world_size} ranks")
    for kind in {k for k, _ in seen}:
        ranks = sorted(r for k, r in seen if k == kind)
        if ranks != list(range(world)):
            raise InputError(str(paths), f"has {kind} artefacts of ranks {ranks}, not of all "
                             f"{world} ranks", "pass every rank's artefact of the launch")
    if launch_group is None:
        if len(groups) != 1:
            raise InputError(str(paths), f"states launch groups {sorted(groups) or 'none'}",
                             "name the launch group (launch_group=...)")
        launch_group = groups.pop()
    elif groups - {launch_group}:
        raise InputError(str(paths), f"states launch group(s) {sorted(groups)}, not "
                         f"{launch_group!r}", "drop the launch group argument or correct it")
    res = LaunchResult(launch_group, world)
    res.runs = ingest_paths(store, list[str | Path](files), program, options, task_id=task_id,
                            launch={"launch_group": launch_group})
    return res
