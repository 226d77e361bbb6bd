#!/usr/bin/env bash
# Replay against per-run collection on the H200: each request of REQUESTS_FILE is observed from
# an installed wheel of argusdb twice into fresh stores, with replay (the default: one run of
# the program, the other collections on replays of the captured launch) and with --no-replay,
# after timing the program alone twice. Writes walls.txt (program alone, each observe), the
# --json reports, the logs and the task folders (no cubins, ncu reports or capture bytes;
# Proton traces gzipped) into OUT/<REQUESTS_FILE name>.tar.gz.
#
#   bash tools/h200/observe_replay.sh WHEELS_DIR OUT_DIR REQUESTS_FILE [MODES]
#
# REQUESTS_FILE: lines "name folder region signals command..." (folders of tests/data/programs/);
# MODES: "replay no-replay" (default) or one of them. WHEELS_DIR as for observe_programs.sh.
set -uo pipefail
source "$(dirname "$0")/common.sh"
requests "${3:?requests file}"
MODES=${4:-"replay no-replay"}
wheel_site
copy_programs
where "$WORK"
while read -r name dir region sig cmd; do
  [ -z "$name" ] && continue
  cd "/tmp/progs/$dir"
  for run in 1 2; do  # the first compiles the program's kernels; the second finds them cached
    t0=$(date +%s.%N)
    $cmd > "$WORK/$name.alone.log" 2>&1
    echo "$name alone$run rc=$? wall_s=$(wall "$t0")" | tee -a "$WORK/walls.txt"
  done
  for mode in $MODES; do
    flag=""; [ "$mode" = "no-replay" ] && flag="--no-replay"
    python3 -m argusdb observe --region "$region" --signals "$sig" $flag --dry-run \
      -- $cmd > "$WORK/$name.$mode.plan.txt" 2>&1
    t0=$(date +%s.%N)
    python3 -m argusdb observe --region "$region" --signals "$sig" $flag \
      --store "$WORK/$name.$mode.duckdb" --json -- $cmd > "$WORK/$name.$mode.json" \
      2> "$WORK/$name.$mode.log"
    rc=$?
    echo "$name $mode rc=$rc wall_s=$(wall "$t0")" | tee -a "$WORK/walls.txt"
    tail -n 5 "$WORK/$name.$mode.log"
    mv "$WORK/$name.$mode.duckdb.runs" "$WORK/$name.$mode.runs" 2>/dev/null
  done
done < <(grep -v '^#' "$REQS")
cd /tmp
find "$WORK" \( -name "*.ncu-rep" -o -name "*.cubin" -o -name "storage.*.bin" \) -delete
# Proton traces gzipped, their task results naming the .gz (as tests/data/gpu/programs/ has them)
find "$WORK" -name "*.chrome_trace" -exec gzip -9 {} \;
find "$WORK" -name result.json -path "*proton_instr*" -exec sed -i \
  's/"instr.chrome_trace"/"instr.chrome_trace.gz"/' {} \;
tar czf "$OUT/$NAME.tar.gz" -C /tmp "$NAME"
ls -la "$OUT"
