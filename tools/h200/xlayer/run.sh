#!/usr/bin/env bash
# One batched call on 2 H200s (nvidia-h200-x2): both versions of tp_block.py, each launched
# with torchrun N times per collection mode, artefacts of every rank into OUT_DIR/xlayer.tar.gz.
#
#   bash tools/h200/xlayer/run.sh OUT_DIR [NPROC]
#
# Modes per version: none (the program alone: its own step wall time, the cost baseline),
# events (CUDA events; on a CPU-only host the rehearsal runs gloo and `cupti` fails)
# events (CUDA events, timing-clean) x3, forced (collectives forced synchronous) x2,
# cupti (torch.profiler CUDA activity only) x1, profiler (CPU+CUDA torch.profiler) x1.
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../../.." && pwd)
OUT=${1:?out dir}
NPROC=${2:-2}
WORK=/tmp/xlayer
rm -rf "$WORK"; mkdir -p "$WORK" "$OUT"
export PYTHONPATH="$ROOT" PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 OMP_NUM_THREADS=4
PROG="$ROOT/tools/h200/xlayer/tp_block.py"
STEPS=${STEPS:-60}
# Extra program arguments (the CPU rehearsal passes small sizes: XL_ARGS="--tokens 64 ...").
read -r -a XL_ARGS <<< "${XL_ARGS:-}"
{ nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm --format=csv
  nvidia-smi topo -m
  python3 -c "import torch,triton;print('torch',torch.__version__,'triton',triton.__version__,'nccl',torch.cuda.nccl.version(),'gpus',torch.cuda.device_count())"
} > "$WORK/env.txt" 2>&1
cat "$WORK/env.txt"
BUDGET_S=${BUDGET_S:-420}  # launches that would start later than this are skipped
START=$(date +%s)
launch() {  # version mode rep [extra program args]
  local v=$1 m=$2 r=$3; shift 3
  local lg="xl-$v-$m-$r" t0 rc
  if [ $(( $(date +%s) - START )) -gt "$BUDGET_S" ]; then
    echo "$lg skipped (past ${BUDGET_S}s)" | tee -a "$WORK/walls.txt"; return
  fi
  t0=$(date +%s.%N)
  if [ "$m" = none ]; then
    timeout 120 torchrun --nproc-per-node "$NPROC" "$PROG" --version "$v" --steps "$STEPS" --result-dir "$WORK/$lg" "${XL_ARGS[@]}" "$@" \
      > "$WORK/$lg.log" 2>&1; rc=$?
  else
    ARGUS_DIST_MODE=$m ARGUS_DIST_OUT="$WORK/$lg" ARGUS_DIST_STEM="tp_block.$v.$m.r$r" \
    ARGUS_LAUNCH_GROUP="$lg" timeout 150 torchrun --nproc-per-node "$NPROC" \
      -m argusdb.observe.launch.rank_boot "$PROG" --version "$v" --steps "$STEPS" --result-dir "$WORK/$lg" "${XL_ARGS[@]}" "$@" \
      > "$WORK/$lg.log" 2>&1; rc=$?
  fi
  echo "$lg rc=$rc wall_s=$(python3 -c "print(round($(date +%s.%N) - $t0, 2))")" | tee -a "$WORK/walls.txt"
  for f in "$WORK/$lg"/result.rank*.json; do
    [ -f "$f" ] && sed "s/^{/{\"launch_group\": \"$lg\", /" "$f" >> "$WORK/results.jsonl"
  done
  [ $rc -eq 0 ] || tail -n 15 "$WORK/$lg.log"
}
for rep in 1 2 3; do
  for v in serial overlap; do
    [ $rep -le 2 ] && launch $v none $rep
    launch $v events $rep
    [ $rep -le 2 ] && launch $v forced $rep
    if [ $rep -eq 1 ]; then
      launch $v cupti 1
      STEPS=12 launch $v profiler 1
    fi
  done
done
cat "$WORK/results.jsonl"
tar czf "$OUT/xlayer.tar.gz" -C /tmp xlayer
ls -la "$OUT"
