"""Run the kernels and their variants under TRITON_INTERPRET=1 (a separate process).

Triton decides interpretation when ``triton.language`` is imported, so this cannot run in a
pytest process that has already compiled kernels. Prints one JSON object: for each case the
parent's relative error against torch and, per variant, whether its output equals the parent's.

Example:
    TRITON_INTERPRET=1 python -m tests.transforms.interp_check
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

assert os.environ.get("TRITON_INTERPRET") == "1", "run with TRITON_INTERPRET=1"

from argusdb.collectors.regions import ProgramSource  # noqa: E402
from argusdb.observe.runner.gpu_tools import interpreter_index_shim  # noqa: E402
from argusdb.observe.transforms import forced_wait, proton_scopes  # noqa: E402
from tests.transforms.kernels import KERNELS, load  # noqa: E402

CASES = [
    ("softmax", "load", {"rows": 16, "cols": 100}, {}),
    ("matmul", "mainloop", {"n": 64}, {"BM": 32, "BN": 32, "BK": 16}),
    ("attention", "load_k", {"batch": 1, "heads": 2, "n_ctx": 64, "head_dim": 16},
     {"BLOCK_M": 32, "BLOCK_N": 16}),
    ("attention", "load_v", {"batch": 1, "heads": 1, "n_ctx": 64, "head_dim": 16},
     {"BLOCK_M": 32, "BLOCK_N": 16, "CAUSAL": False}),
]


def main() -> None:
    import torch

    interpreter_index_shim()
    tmp = Path(tempfile.mkdtemp())
    out = {}
    for i, (program, region, size, config) in enumerate(CASES):
        src = ProgramSource.from_path(KERNELS / f"{program}.py")
        parent = load(src.text, f"i{i}_{program}_parent", tmp)
        t = parent.setup(device="cpu", **size)
        parent.launch(t, **config)
        want = parent.result(t).clone()
        case = {"parent_rel_err": parent.rel_err(want, parent.reference(t))}
        for tag, var in (("forced_wait", forced_wait(src, region)),
                         ("proton_scopes", proton_scopes(src, [region]))):
            mod = load(var.source.text, f"i{i}_{program}_{tag}", tmp)
            mod.launch(t, **config)
            case[tag] = bool(torch.equal(mod.result(t), want))
        out[f"{program}/{region}"] = case
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
