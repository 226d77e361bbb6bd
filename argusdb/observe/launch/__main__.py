"""``python -m argusdb.observe.launch --kernel K --program P --out DIR [--mode M] [--rank R] --
COMMAND [ARGS...]``.

Runs COMMAND with the launcher's hooks (see :mod:`argusdb.observe.launch`) and prints, per process
that
launched the kernel, its launches by binary and the binary the program settled on. ``--mode
discover`` also dumps that binary's TTGIR, PTX and SASS into DIR. ``--rank R`` (a torchrun
COMMAND) installs the hooks in rank R only.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

from argusdb.observe.launch import command_env, read_launches, write_spec


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if "--" not in args:
        print("usage: python -m argusdb.observe.launch --kernel K --program P --out DIR "
              "-- COMMAND...",
              file=sys.stderr)
        return 2
    cut = args.index("--")
    ap = argparse.ArgumentParser(prog="python -m argusdb.observe.launch")
    ap.add_argument("--kernel", required=True, help="name of the @triton.jit function")
    ap.add_argument("--program", required=True, help="module (file stem) that defines it")
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--mode", default="discover", choices=["discover", "plain", "time"])
    ap.add_argument("--rank", type=int, default=None,
                    help="a torchrun command: the hooks in this rank only")
    a = ap.parse_args(args[:cut])
    command = args[cut + 1:]
    if not command:
        ap.error("no COMMAND after --")
    spec = write_spec(a.out / "launch.spec.json", {
        "kernel": a.kernel, "program": a.program, "out": str(a.out.resolve()), "mode": a.mode,
        **({} if a.rank is None else {"rank": a.rank})})
    rc = subprocess.call(command, env=command_env(spec, os.environ))
    for doc in read_launches(a.out):
        by = Counter((x["binary"], x["role"]) for x in doc.get("launches", []))
        print(f"pid {doc['pid']}: {len(doc.get('launches', []))} launches of {a.kernel}"
              f" from {doc.get('module_file')}; chosen binary {doc.get('chosen_binary')}",
              file=sys.stderr)
        for (h, role), n in sorted(by.items()):
            print(f"  {h} {role}: {n}", file=sys.stderr)
        for err in doc.get("errors", []):
            print(f"  error: {err}", file=sys.stderr)
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
