"""``python3 -m argusdb ARGS`` that stamps on stderr when main returns (``MAIN-END``) and when
the last exit handler runs (``ATEXIT``): what the process spends after its report
(tools/h200/replay_stages.sh)."""

import atexit
import runpy
import sys
import time

atexit.register(lambda: print(f"ATEXIT {time.time():.6f}", file=sys.stderr, flush=True))
sys.argv = ["argus", *sys.argv[1:]]
try:
    runpy.run_module("argusdb", run_name="__main__")
finally:
    print(f"MAIN-END {time.time():.6f}", file=sys.stderr, flush=True)
