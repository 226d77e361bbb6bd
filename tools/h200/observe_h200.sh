#!/usr/bin/env bash
# `argus observe` for real on a GPU machine without registry access (the H200 machine):
# installs argusdb's missing dependencies and cupti-python from carried wheels, observes a region
# of each kernel with the live runner, runs the gpu-marked tests, and recounts metric passes
# with cupti-python 13.4's profiler_host. Writes OUT/observe.tar.gz (store, reports, artefacts).
#
#   bash tools/h200/observe_h200.sh WHEELS_DIR OUT_DIR
#
# WHEELS_DIR holds argus/ (duckdb, sqlglot, ijson), cupti130/ and cupti134/ (see bench/gpu).
set -uo pipefail
source "$(dirname "$0")/common.sh"
WORK=/tmp/observe
mkdir -p "$WORK" "$OUT"
install_wheels argus cupti130 cupti134
export PYTHONPATH="$ROOT:/tmp/site_argus" ARGUS_GPU_SITE=/tmp/site_cupti130 PYTHONUNBUFFERED=1
cd "$ROOT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv > "$WORK/nvidia-smi.csv"
# kernel, region, signals: the region of each kernel whose exposed latency and source counters
# the planner turns into parent timing, forced-wait variant timing, ncu source page, attribution
# and derivation; then the duration of the softmax load region (Proton scopes, instrumentation)
# and of the whole softmax kernel (a clean timing the first request already stored).
while read -r k region signals; do
  name="$k.${region##*/}.${signals%%,*}"
  t0=$(date +%s.%N)
  python3 -m argusdb observe "argusdb/demo/kernels/$k.py" --region "$region" --signals "$signals" \
    --store "$WORK/observe.duckdb" --json > "$WORK/$name.json" 2> "$WORK/$name.log"
  rc=$?
  t1=$(date +%s.%N)
  echo "$name rc=$rc wall_s=$(python3 -c "print(round($t1 - $t0, 2))")" | tee -a "$WORK/walls.txt"
  tail -n 3 "$WORK/$name.log"
done <<'REQ'
softmax softmax/softmax_fwd/load exposed_latency,inst_executed,warp_stall_samples
matmul matmul/matmul_kernel/mainloop exposed_latency,inst_executed
attention attention/attn_fwd/load_k exposed_latency,inst_executed
softmax softmax/softmax_fwd/load duration
softmax softmax/softmax_fwd duration
REQ
python3 -m pytest -p no:cacheprovider -m gpu tests/runner tests/transforms -q 2>&1 | tail -n 5 \
  | tee "$WORK/pytest_gpu.txt"
PYTHONPATH="$ROOT:/tmp/site_cupti134" python3 tools/h200/record.py profiler-host --out "$WORK" \
  --metrics tools/h200/metric_lists.json 2>&1 | tail -n 2
find "$WORK" -name "*.ncu-rep" -delete
tar czf "$OUT/observe.tar.gz" -C /tmp observe
