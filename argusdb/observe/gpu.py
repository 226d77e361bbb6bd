"""Whether this machine has an NVIDIA GPU: the one test that observe, its backends and the
test suite's ``gpu`` marker share (so they never disagree)."""

from __future__ import annotations

import shutil
from pathlib import Path


def has_gpu() -> bool:
    """True when this machine shows an NVIDIA GPU (the driver's tool or a device node)."""
    return shutil.which("nvidia-smi") is not None or Path("/dev/nvidia0").exists()
