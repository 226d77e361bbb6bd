"""A ``torchrun`` command line: read with torch's own parser, rewritten to run every rank under
the argusdb recorder.

``torchrun [OPTIONS] PROGRAM ARGS`` (or ``python -m torch.distributed.run ...``) becomes
``torchrun [OPTIONS] -m argusdb.observe.launch.rank_boot PROGRAM ARGS``: torchrun's options stay as
the user wrote them (rendezvous, ports, restarts), and each rank installs the recorder named by
``ARGUS_DIST_MODE`` before the program's own imports (:mod:`argusdb.observe.launch.rank_boot`).

Example:
    >>> cmd = parse(["torchrun", "--nproc-per-node", "2", "prog.py", "--steps", "5"])
    >>> cmd.world_size, cmd.program
    (2, 'prog.py')
    >>> cmd.argv()[-4:]
    ['argusdb.observe.launch.rank_boot', 'prog.py', '--steps', '5']
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from argusdb.errors import UsageError

#: Python modules that are torchrun (``python -m MODULE``).
LAUNCHER_MODULES = ("torch.distributed.run", "torch.distributed.launch")
BOOTSTRAP = "argusdb.observe.launch.rank_boot"


@dataclass(frozen=True)
class TorchrunCommand:
    """A parsed torchrun command.

    Attributes:
        launcher: the argv that starts torchrun (``["torchrun"]`` or ``[python, "-m",
            "torch.distributed.run"]``).
        options: torchrun's own options as given (``-m``/``--module`` taken out).
        nproc_per_node: ranks this node starts.
        program: the program's script (or module name with ``module``).
        program_args: the program's arguments.
        module: the program is a module (torchrun ``-m``).
    """

    launcher: tuple[str, ...]
    options: tuple[str, ...]
    nproc_per_node: int
    program: str
    program_args: tuple[str, ...]
    module: bool = False

    @property
    def world_size(self) -> int:
        """Ranks of the launch (one node)."""
        return self.nproc_per_node

    @property
    def stem(self) -> str:
        """The program's name (script stem or the module's last part)."""
        return self.program.rsplit(".", 1)[-1] if self.module else Path(self.program).stem

    def argv(self) -> list[str]:
        """The command that runs every rank under the recorder."""
        prog = ["-m", self.program] if self.module else [self.program]
        return [*self.launcher, *self.options, "-m", BOOTSTRAP, *prog, *self.program_args]


def is_torchrun(argv: list[str]) -> bool:
    """True when ``argv`` starts torchrun (the script or ``python -m torch.distributed.run``)."""
    if not argv:
        return False
    if Path(argv[0]).name == "torchrun":
        return True
    return (Path(argv[0]).name.startswith("python") and len(argv) > 2 and argv[1] == "-m"
            and argv[2] in LAUNCHER_MODULES)


def _nproc(value: str) -> int:
    if value.isdigit() and int(value) > 0:
        return int(value)
    if value in ("auto", "gpu", "cpu"):
        import torch

        if value == "gpu" or (value == "auto" and torch.cuda.is_available()):
            n = torch.cuda.device_count()
            if n == 0:
                raise UsageError(f"--nproc-per-node {value}: this host has no CUDA device; "
                                 "give the number of ranks (e.g. --nproc-per-node 2)")
            return n
        return os.cpu_count() or 1
    raise UsageError(f"--nproc-per-node {value!r}: expected a positive number of ranks, auto, "
                     "gpu or cpu")


def parse(argv: list[str]) -> TorchrunCommand:
    """Read a torchrun command with torch's parser (``torch.distributed.run``).

    Raises:
        UsageError: not torchrun, torch missing, options torchrun refuses, several nodes, or
            ``--no-python`` (a non-Python program cannot load the recorder).
    """
    if not is_torchrun(argv):
        raise UsageError(f"{' '.join(argv[:3])}: not a torchrun command (torchrun ... or "
                         "python -m torch.distributed.run ...)")
    launcher = argv[:1] if Path(argv[0]).name == "torchrun" else argv[:3]
    rest = argv[len(launcher):]
    try:
        from torch.distributed.run import get_args_parser
    except ImportError as exc:
        raise UsageError("torch is not importable here, so torchrun's options cannot be read; "
                         "install torch (pip install torch) in this environment") from exc
    import contextlib
    import io

    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            args = get_args_parser().parse_args(rest)
    except SystemExit as exc:
        msg = err.getvalue().strip().splitlines()
        raise UsageError(f"torchrun options: {msg[-1] if msg else 'not understood'}; check the "
                         "command after '--'") from exc
    nnodes = str(args.nnodes)
    if nnodes.split(":")[-1] != "1":
        raise UsageError(f"--nnodes {nnodes}: observe launches one node; the artefacts of ranks "
                         "on other nodes would not be here. Observe on one node "
                         "(--nnodes 1, --nproc-per-node N)")
    if args.no_python:
        raise UsageError("--no-python: the program is not Python, so the ranks cannot load the "
                         "argusdb recorder; run a Python program")
    script_args = list(args.training_script_args)
    k = len(rest) - 1 - len(script_args)
    if k < 0 or rest[k] != args.training_script:
        raise UsageError(f"torchrun command: cannot find the program {args.training_script!r} "
                         "in the arguments; put torchrun's options before the program")
    options = [o for o in rest[:k] if o not in ("-m", "--module")]
    return TorchrunCommand(tuple(launcher), tuple(options), _nproc(str(args.nproc_per_node)),
                           str(args.training_script), tuple(script_args), bool(args.module))
