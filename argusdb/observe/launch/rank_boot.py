"""Run a program as one rank under the argusdb recorder: ``-m argusdb.observe.launch.rank_boot``.

``torchrun`` starts it in every rank (``torchrun --nproc-per-node N -m
argusdb.observe.launch.rank_boot PROGRAM [ARGS...]``, or ``... bootstrap -m MODULE [ARGS...]`` for
a module program); it installs the recorder named by
``ARGUS_DIST_MODE`` (``events``, ``forced`` or ``profiler``, see
:mod:`argusdb.observe.launch.recorder`) and runs ``PROGRAM`` as ``__main__``. Artefacts go to
``ARGUS_DIST_OUT`` (default ``.``) named ``ARGUS_DIST_STEM`` (default: the program's stem);
``ARGUS_LAUNCH_GROUP`` names the launch all ranks belong to (``argus ingest --launch-group``
and :func:`argusdb.ingest.ranks.ingest_launch` key runs by it).
"""

from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path

from argusdb import environment


def main(argv: list[str]) -> None:
    if not argv:
        raise SystemExit("usage: python -m argusdb.observe.launch.rank_boot [-m MODULE | PROGRAM] "
                         "[ARGS...]")
    from argusdb.observe.launch.recorder import install
    module = argv[0] == "-m"
    if module:
        if len(argv) < 2:
            raise SystemExit("usage: python -m argusdb.observe.launch.rank_boot -m MODULE "
                             "[ARGS...]")
        argv = argv[1:]
    prog = argv[0]
    mode = environment.DIST_MODE.get() or "events"
    out = Path(environment.DIST_OUT.get() or ".")
    stem = environment.DIST_STEM.get() or (prog.rsplit(".", 1)[-1] if module else Path(prog).stem)
    group = environment.LAUNCH_GROUP.get() or os.environ.get("TORCHELASTIC_RUN_ID", "local")
    # the launcher stops a launch past its time limit through these (torchrun starts each
    # worker in a session of its own)
    out.mkdir(parents=True, exist_ok=True)
    (out / f".rank{os.environ.get('RANK', 0)}.pid").write_text(str(os.getpid()))
    install(mode, out, stem, group)
    sys.argv = list(argv)
    if module:
        sys.path.insert(0, os.getcwd())
        runpy.run_module(prog, run_name="__main__", alter_sys=True)
        return
    sys.path.insert(0, str(Path(prog).resolve().parent))
    runpy.run_path(prog, run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
