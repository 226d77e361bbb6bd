#!/usr/bin/env bash
# `argus observe ... -- python3 PROGRAM` of the three user programs of tests/data/programs/ on
# the H200 machine, unmodified, from an installed wheel of argusdb (not the checkout): builds
# the wheel, installs it and argusdb's missing dependencies from carried wheels into /tmp,
# copies the programs out of the checkout, observes one region of each with
# duration,inst_executed,warp_stall_samples,exposed_latency into one store, and packs the store,
# the --json reports, the logs and each task's folder into OUT/programs.tar.gz.
#
#   bash tools/h200/observe_programs.sh WHEELS_DIR OUT_DIR [REQUESTS_FILE]
#
# REQUESTS_FILE: lines "name folder region signals command..." to observe instead of the three
# programs (then the reuse and budget runs of the model are skipped).
#
# WHEELS_DIR holds argus/ (duckdb, sqlglot, ijson) and cupti130/ (cupti-python 13.0.1,
# pyelftools); see bench/gpu/README.md.
set -uo pipefail
source "$(dirname "$0")/common.sh"
REQS=${3:-}
[ -n "$REQS" ] && REQS=$(cd "$(dirname "$REQS")" && pwd)/$(basename "$REQS")
WORK=/tmp/programs
rm -rf "$WORK" && mkdir -p "$WORK" "$OUT"
wheel_site
copy_programs
cd /tmp/progs
find . -name "*.py" | sort | xargs sha256sum > "$WORK/programs.before.sha256"
where "$WORK"
S="duration,inst_executed,warp_stall_samples,exposed_latency"
# name, folder, region, signals ("-": the default), command
DEFAULT_REQS="model model fused_norm/layernorm_fwd/load - python3 model.py
autotuned autotuned softmax_tuned/softmax_kernel/load - python3 run.py
pipelined pipelined matmul_loop/matmul_kernel/load_tiles - python3 gemm.py"
while read -r name dir region sig cmd; do
  [ -z "$name" ] && continue
  [ "$sig" = "-" ] || S1=$sig
  [ "$sig" = "-" ] && S1=$S
  cd "/tmp/progs/$dir"
  python3 -m argusdb observe --region "$region" --signals "$S1" --dry-run --json -- $cmd \
    > "$WORK/$name.dry.json" 2> "$WORK/$name.dry.log"
  t0=$(date +%s.%N)
  python3 -m argusdb observe --region "$region" --signals "$S1" --store "$WORK/observe.duckdb" \
    --json -- $cmd > "$WORK/$name.json" 2> "$WORK/$name.log"
  rc=$?
  echo "$name rc=$rc wall_s=$(wall "$t0")" | tee -a "$WORK/walls.txt"
  tail -n 12 "$WORK/$name.log"
done < <(if [ -n "$REQS" ]; then grep -v '^#' "$REQS"; else echo "$DEFAULT_REQS"; fi)
if [ -z "$REQS" ]; then
# The same request again into the same store: the control run finds the same binary, so every
# collection is answered by the stored runs. Then a dry run trimmed to a budget by the costs
# the store recorded.
cd /tmp/progs/model
python3 -m argusdb observe --region fused_norm/layernorm_fwd/load --signals "$S" \
  --store "$WORK/observe.duckdb" --json -- python3 model.py > "$WORK/model.again.json" \
  2> "$WORK/model.again.log"
echo "model.again rc=$?" | tee -a "$WORK/walls.txt"
python3 -m argusdb observe --region fused_norm/layernorm_fwd/store --signals "$S" \
  --store "$WORK/observe.duckdb" --budget-s 12 --dry-run --json -- python3 model.py \
  > "$WORK/model.budget.json" 2> "$WORK/model.budget.log"
echo "model.budget rc=$?" | tee -a "$WORK/walls.txt"
fi
cd /tmp/progs
find . -name "*.py" | sort | xargs sha256sum > "$WORK/programs.after.sha256"
cmp "$WORK/programs.before.sha256" "$WORK/programs.after.sha256" && echo "programs unmodified"
cd /tmp
find "$WORK" -name "*.ncu-rep" -delete
find "$WORK" -name "*.cubin" -delete
tar czf "$OUT/programs.tar.gz" -C /tmp programs
ls -la "$OUT"
