#!/usr/bin/env bash
# One rank on one H200: `argus observe --region fused/bias_gelu/load --signals
# duration,inst_executed,exposed_latency,exposed_communication -- torchrun --nproc-per-node 1
# --standalone mlp.py` on the tensor-parallel MLP of tests/data/programs/xrank/ (no step
# marker, a Triton bias+GELU with `# region` comments, all-reduce through NCCL), from an
# installed wheel of argusdb (not the checkout). Kernel signals are measured in rank 0 (the
# command form's one run and its replays); exposed communication over the window and per found
# step. Writes the --dry-run plan, the --json report, the log and the task folders (no cubins,
# ncu reports or capture bytes) into OUT/xrank.tar.gz and prints the walls and key figures.
#
#   bash tools/h200/observe_xrank.sh WHEELS_DIR OUT_DIR
#
# WHEELS_DIR holds argus/ (duckdb, sqlglot, ijson) and cupti130/ (cupti-python 13.0.1,
# pyelftools); see bench/gpu/README.md. About 2 minutes on the H200.
set -uo pipefail
source "$(dirname "$0")/common.sh"
WORK=/tmp/xrank
T0=$(date +%s.%N)
rm -rf "$WORK" /tmp/progs_xrank && mkdir -p "$WORK" "$OUT"
wheel_site
export ARGUS_DIST_TIMEOUT_S=90
cp -r "$ROOT/tests/data/programs/xrank" /tmp/progs_xrank
cd /tmp/progs_xrank
where "$WORK"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__,
'nccl', '.'.join(map(str, torch.cuda.nccl.version())))" > "$WORK/versions.txt" 2>&1
cat "$WORK/versions.txt"
TR="torchrun"; command -v torchrun > /dev/null || TR="python3 -m torch.distributed.run"
CMD="$TR --nproc-per-node 1 --standalone mlp.py --iters 12"
REGION=fused/bias_gelu/load
SIG=duration,inst_executed,exposed_latency,exposed_communication
echo "setup wall_s=$(wall "$T0")" | tee -a "$WORK/walls.txt"
python3 -m argusdb observe --region $REGION --signals $SIG --dry-run -- $CMD \
  > "$WORK/plan.txt" 2>&1
t0=$(date +%s.%N)
timeout 130 python3 -m argusdb observe --region $REGION --signals $SIG --rank 0 \
  --store "$WORK/xrank.duckdb" --json -- $CMD > "$WORK/observe.json" 2> "$WORK/observe.log"
rc=$?
echo "observe rc=$rc wall_s=$(wall "$t0")" | tee -a "$WORK/walls.txt"
tail -n 25 "$WORK/observe.log"
python3 - "$WORK/observe.json" <<'PY' | tee "$WORK/figures.txt"
import json, sys
try:
    text = open(sys.argv[1]).read()
    rep = json.loads(text[text.index('{"ok"'):])
except (OSError, ValueError) as exc:
    sys.exit(f"no report: {exc!r}")
print("ok", rep["ok"], "wall_s", round(rep["wall_s"], 2))
for t in rep["tasks"]:
    print(f"  {t['id'].split('.', 1)[1]}: {t['status']} {t['wall_s']:.2f} s")
for sig, a in rep["distributed"]["signals"].items():
    print(sig, a["verdict"], a.get("why", ""))
    for r in a["per_rank"]:
        print("  ", {k: r.get(k) for k in ("rank", "name", "n", "median_dur_ns", "per", "basis",
                                          "exposed_comm_ns", "comm_ns", "window_ns",
                                          "window_comm_ns", "window_exposed_comm_ns",
                                          "upper_bound", "period", "n_steps") if k in r})
k = rep.get("kernel") or {}
for sig, a in (k.get("signals") or {}).items():
    print("kernel", sig, a["verdict"], a.get("why", ""))
    for r in a["rows"]:
        print("  ", r)
print("attribution", json.dumps(k.get("attribution")))
PY
cd /tmp
find "$WORK" \( -name "*.ncu-rep" -o -name "*.cubin" -o -name "storage.*.bin" \) -delete
find "$WORK" -name "*.chrome_trace" -exec gzip -9 {} \;
find "$WORK" -name result.json -path "*proton_instr*" -exec sed -i \
  's/"instr.chrome_trace"/"instr.chrome_trace.gz"/' {} \;
mv "$WORK/xrank.duckdb" /tmp/xrank.duckdb 2>/dev/null  # the store stays out: tests rebuild it
tar czf "$OUT/xrank.tar.gz" -C /tmp xrank
ls -la "$OUT"
echo "total wall_s=$(wall "$T0")" | tee -a "$WORK/walls.txt"
