#!/usr/bin/env bash
# The live worker's collections that `tools/h200/observe_h200.sh` does not reach (their readers or
# plans live on other branches): Proton instrumentation of a proton_scopes variant, Proton PC
# sampling, clean timing of a pipelining_off variant, and ncu with a metric list only.
#
#   bash tools/h200/worker_h200.sh WHEELS_DIR OUT_DIR      (writes OUT_DIR/worker.tar.gz)
set -uo pipefail
source "$(dirname "$0")/common.sh"
WORK=/tmp/worker
mkdir -p "$WORK" "$OUT"
install_wheels cupti130
export PYTHONPATH="$ROOT:/tmp/site_cupti130" PYTHONUNBUFFERED=1
cd "$ROOT"
python3 - "$WORK" <<'PY'
import sys
from pathlib import Path
from argusdb.collectors.regions import ProgramSource
from argusdb.observe.transforms import proton_scopes
w = Path(sys.argv[1])
for k, regions in (("softmax", ["load", "reduce", "store"]), ("attention", ["load_k", "pv"])):
    src = ProgramSource.from_path(f"argusdb/demo/kernels/{k}.py")
    (w / k).mkdir(parents=True, exist_ok=True)
    (w / k / f"{k}.py").write_text(proton_scopes(src, regions).source.text)
PY
run() {  # name, then worker arguments
  local name=$1; shift
  local t0; t0=$(date +%s.%N)
  python3 -m argusdb.observe.runner.worker "$@" --out "$WORK/$name" > "$WORK/$name.log" 2>&1
  echo "$name rc=$? wall_s=$(wall "$t0")" | tee -a "$WORK/walls.txt"
  tail -n 2 "$WORK/$name.log"
}
run softmax.proton_instr proton_instr --source "$WORK/softmax/softmax.py" \
  --parent argusdb/demo/kernels/softmax.py --config default
run attention.proton_instr proton_instr --source "$WORK/attention/attention.py" \
  --parent argusdb/demo/kernels/attention.py --config causal
run softmax.pcs proton_pcsampling --source argusdb/demo/kernels/softmax.py --config default \
  --params '{"launches": 20}'
run matmul.pipelining_off cupti_timing --source argusdb/demo/kernels/matmul.py --config bk64_s3 \
  --parent argusdb/demo/kernels/matmul.py --overrides '{"num_stages": 1}' --params '{"launches": 50}'
run matmul.ncu_metrics ncu_source --source argusdb/demo/kernels/matmul.py --config bk64_s3 \
  --params '{"sections": [], "metrics": ["gpu__time_duration.sum", "dram__bytes_read.sum", "smsp__inst_executed.sum"]}'
find "$WORK" -name "*.ncu-rep" -delete
for f in "$WORK"/*/*.chrome_trace; do gzip -9 "$f"; done
tar czf "$OUT/worker.tar.gz" -C /tmp worker
