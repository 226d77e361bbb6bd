"""Which GPU target a plan is for: the user's option, the stored binary, or the device.

No target is assumed: pass counts of hardware-counter lists are per chip, so a plan knows
them only once the target is known. In order:

1. ``--option target=...`` (what ``options["target"]`` pins);
2. the binary the store already holds for this exact source (its ``program_version.target``,
   read from the TTGIR/PTX/SASS or the ncu report it was ingested from);
3. the device of this machine (``nvidia-smi --query-gpu=compute_cap``).

Example:
    >>> resolve({"target": "sm_90a"}, None, None)
    Target(target='sm_90', how='the target option (sm_90a)')
    >>> from_capability("9.0")
    'sm_90'
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from typing import TYPE_CHECKING

from argusdb.collectors.base import normalize_target

if TYPE_CHECKING:
    from argusdb.collectors.regions import ProgramSource
    from argusdb.store.embedded import Store


@dataclass(frozen=True)
class Target:
    """A resolved target (``sm_<major><minor>``, None when unknown) and where it came from."""

    target: str | None
    how: str


def from_capability(capability: str) -> str | None:
    """``9.0`` (nvidia-smi's ``compute_cap``, torch's capability) → ``sm_90``."""
    return normalize_target(capability)


def device_target() -> str | None:
    """The target of this machine's first NVIDIA GPU, None where there is none."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        out = subprocess.run([smi, "--query-gpu=compute_cap", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    first = out.strip().splitlines()[:1]
    return from_capability(first[0]) if first else None


def stored_target(store: Store, src: ProgramSource) -> str | None:
    """The one target the store's parent versions of this exact source were built for."""
    rows = store.rows(
        "SELECT DISTINCT target FROM program_version WHERE source_sha256 = ? AND program = ? "
        "AND parent_version IS NULL AND target IS NOT NULL", [src.sha256, src.stem])
    return str(rows[0]["target"]) if len(rows) == 1 else None


def resolve(options: dict[str, str] | None, store: Store | None,
            src: ProgramSource | None) -> Target:
    """The plan's target: the option, else the stored binary's, else the device's."""
    given = (options or {}).get("target")
    if given:
        return Target(normalize_target(given) or given, f"the target option ({given})")
    if store is not None and src is not None:
        stored = stored_target(store, src)
        if stored:
            return Target(stored, f"the binary of {src.name} in the store ({stored})")
    dev = device_target()
    if dev:
        return Target(dev, f"this machine's GPU ({dev})")
    return Target(None, "no target option, no stored binary of this source and no GPU here")
