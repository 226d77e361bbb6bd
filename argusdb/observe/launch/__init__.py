"""The launcher: run a user's command with argusdb's Triton hooks in every Python process.

``python -m argusdb.observe.launch --kernel K --program P --out DIR [--mode MODE] -- COMMAND...``
(or
:func:`command_env` for the runner) puts ``argusdb/observe/launch/boot`` first on ``PYTHONPATH`` and
names a spec file in ``ARGUS_LAUNCH_SPEC``; the bootstrap's ``sitecustomize`` then installs the
hooks of :mod:`argusdb.observe.launch.hooks` before the program imports its kernels, in the
command's
own working directory and environment, without editing its files. Each process that launched
the kernel writes ``DIR/launch.<pid>.json``; :func:`read_launches` reads them back.

Example:
    >>> import os
    >>> env = command_env(Path("spec.json"), os.environ)
    >>> env["ARGUS_LAUNCH_SPEC"]
    'spec.json'
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from argusdb import environment
from argusdb.observe.launch.hooks import SPEC_ENV

__all__ = ["SPEC_ENV", "boot_dir", "command_env", "read_launches", "write_spec"]


def boot_dir() -> Path:
    """The folder whose ``sitecustomize`` installs the hooks."""
    return Path(__file__).resolve().parent / "boot"


def write_spec(path: Path, spec: dict[str, Any]) -> Path:
    """Write a launch spec (``kernel``, ``program``, ``out``, ``mode``, ...) to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(spec, indent=1))
    return path


def command_env(spec_path: Path, base: Mapping[str, str]) -> dict[str, str]:
    """The command's environment plus the bootstrap: ``PYTHONPATH`` = boot folder, the site
    with cupti-python (``ARGUS_GPU_SITE``) where set, the user's entries, argusdb's own root."""
    env = dict(base)
    root = str(Path(__file__).resolve().parents[3])  # the folder that holds argusdb/
    parts = [str(boot_dir())]
    site = environment.GPU_SITE.get(base)
    if site:
        parts.append(site)
    parts += [p for p in base.get("PYTHONPATH", "").split(os.pathsep) if p]
    parts.append(root)
    env.update({"PYTHONPATH": os.pathsep.join(parts), SPEC_ENV: str(spec_path),
                "PYTHONUNBUFFERED": "1"})
    return env


def read_launches(out: Path) -> list[dict[str, Any]]:
    """The launch records the processes of one run wrote, oldest process first."""
    docs = [json.loads(p.read_text()) for p in sorted(out.glob("launch.*.json"))
            if p.name.split(".")[1].isdigit()]
    return sorted(docs, key=lambda d: d.get("pid", 0))
