#!/usr/bin/env bash
# The optimizer A/B of experiments/ab/ on the H200 machine: installs argusdb's missing dependencies
# and cupti-python from carried wheels into /tmp, runs `python -m experiments.ab.run` (every kernel,
# both arms, the seeds given) and packs the stores, logs and summary (not the per-candidate
# artefacts) into OUT/ab.tar.gz.
#
#   bash tools/h200/ab.sh WHEELS_DIR OUT_DIR [experiments.ab.run options...]
#
# AB_TIMEOUT_S (default 540) stops the run so that what was written is still packed.
# WHEELS_DIR holds argus/ (duckdb, sqlglot, ijson) and cupti130/ (cupti-python 13.0.1,
# pyelftools); see bench/gpu/README.md.
set -uo pipefail
source "$(dirname "$0")/common.sh"
shift 2
install_wheels argus cupti130
export PYTHONPATH="$ROOT:/tmp/site_argus:/tmp/site_cupti130" PYTHONUNBUFFERED=1
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv,noheader
cd "$ROOT"
t0=$(date +%s)
rm -rf /tmp/ab
timeout "${AB_TIMEOUT_S:-540}" python3 -m experiments.ab.run --out /tmp/ab "$@" 2>&1 | tee "$OUT/run.log"
rc=${PIPESTATUS[0]}
echo "experiments.ab.run rc=$rc wall_s=$(( $(date +%s) - t0 ))" | tee -a "$OUT/run.log"
for f in /tmp/ab/*.log; do echo "== $f"; grep -v -i "warn" "$f" | tail -n 5; done
tar czf "$OUT/ab.tar.gz" -C /tmp --exclude='art' ab
ls -la "$OUT"
exit $rc
