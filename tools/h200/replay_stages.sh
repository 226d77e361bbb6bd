#!/usr/bin/env bash
# Where the time of `argus observe` goes, per stage, on the H200, from an installed wheel.
# Each request of REQUESTS_FILE is observed into a fresh store after timing the program alone;
# every line argus prints on stderr is stamped with the wall clock (STAMP.log), and
# tools/h200/replay_stages.py then lists, per request, the process wall, each task's wall and
# the stages recorded in the task results (the control run's exit stages, ncu's profile and
# export, the replay worker's capture load, parent, variant compile and measure) and how long
# after the measured launch the first evidence was printed. Optionally NCU_SECTIONS: lists of
# sections (";"-separated, ","-joined) to profile the model's captured launch with over the
# replay worker, each timed with its passes and its export (which list the plan should use);
# PLANS=0: no --dry-run plan per request.
#
#   bash tools/h200/replay_stages.sh WHEELS_DIR OUT_DIR REQUESTS_FILE
#
# REQUESTS_FILE lines: "name folder alone_runs modes region signals command...", modes
# "replay" or "replay,no-replay". Writes OUT/<REQUESTS_FILE name>.tar.gz (no reports, cubins,
# capture bytes; Proton traces gzipped) and prints the summary.
set -uo pipefail
source "$(dirname "$0")/common.sh"
requests "${3:?requests file}"
wheel_site
copy_programs
where "$WORK"
stamp() { while IFS= read -r l; do printf '%s %s\n' "$(date +%s.%N)" "$l"; done; }
while read -r name dir alone modes region sig cmd; do
  [ -z "$name" ] && continue
  cd "/tmp/progs/$dir"
  for run in $(seq 1 "$alone"); do
    t0=$(date +%s.%N)
    $cmd > "$WORK/$name.alone.log" 2>&1
    echo "$name alone$run rc=$? wall_s=$(wall "$t0")" | tee -a "$WORK/walls.txt"
  done
  for mode in ${modes//,/ }; do
    flag=""; [ "$mode" = "no-replay" ] && flag="--no-replay"
    [ "${PLANS:-1}" = 1 ] && python3 -m argusdb observe --region "$region" --signals "$sig" \
      $flag --dry-run -- $cmd > "$WORK/$name.$mode.plan.txt" 2>&1
    t0=$(date +%s.%N)
    echo "$t0 START" > "$WORK/$name.$mode.log"
    timeout 200 python3 "$ROOT/tools/h200/argus_timed.py" observe --region "$region" --signals "$sig" $flag \
      --store "$WORK/$name.$mode.duckdb" --json -- $cmd > "$WORK/$name.$mode.json" \
      2> >(stamp >> "$WORK/$name.$mode.log")
    rc=$?
    echo "$(date +%s.%N) EXITED" >> "$WORK/$name.$mode.log"
    echo "$name $mode rc=$rc wall_s=$(wall "$t0")" | tee -a "$WORK/walls.txt"
    sleep 0.2
    mv "$WORK/$name.$mode.duckdb.runs" "$WORK/$name.$mode.runs" 2>/dev/null
  done
done < <(grep -v '^#' "$REQS")
cd /tmp
# ncu section lists over the replay worker, on the model's captured launch
CAP=$(ls -d "$WORK"/model.replay.runs/*/find_launch/capture 2>/dev/null | head -1)
if [ -n "${NCU_SECTIONS:-}" ] && [ -n "$CAP" ]; then
  MOD=$(python3 -c "import json,sys; print(json.load(open('$CAP/../result.json'))['module_file'])")
  IFS=';' read -ra LISTS <<< "$NCU_SECTIONS"
  for list in "${LISTS[@]}"; do
    args=(); for s in ${list//,/ }; do args+=(--section "$s"); done
    d="$WORK/ncu_sections/${list//,/+}"; mkdir -p "$d"
    printf '{"action": "plain", "capture": "%s", "module_file": "%s", "kernel": "layernorm_fwd", "out": "%s"}' \
      "$CAP" "$MOD" "$d" > "$d/job.json"
    t0=$(date +%s.%N)
    timeout 120 ncu --clock-control none --kernel-name regex:^layernorm_fwd$ --launch-count 1 \
      --import-source yes -f -o "$d/rep" "${args[@]}" python3 -m argusdb.observe.runner.replay \
      "$d/job.json" > "$d/ncu.log" 2>&1
    t1=$(date +%s.%N)
    ncu -i "$d/rep.ncu-rep" --page raw --csv > "$d/raw.csv" 2>/dev/null
    t2=$(date +%s.%N)
    passes=$(grep -o '[0-9]* pass' "$d/ncu.log" | tail -1)
    echo "ncu_sections $list profile_s=$(python3 -c "print(round($t1-$t0,2))") raw_export_s=$(python3 -c "print(round($t2-$t1,2))") $passes cols=$(head -1 "$d/raw.csv" | tr ',' '\n' | wc -l)" | tee -a "$WORK/walls.txt"
    rm -f "$d/rep.ncu-rep"
  done
fi
python3 "$ROOT/tools/h200/replay_stages.py" "$WORK" | tee "$WORK/stages.txt"
find "$WORK" \( -name "*.ncu-rep" -o -name "*.cubin" -o -name "storage.*.bin" -o -name "*.duckdb" -o -name "*.wal" \) -delete
find "$WORK" -name "*.chrome_trace" -exec gzip -9 {} \;
find "$WORK" -name result.json -path "*proton_instr*" -exec sed -i \
  's/"instr.chrome_trace"/"instr.chrome_trace.gz"/' {} \;
find "$WORK" -name "apart.*.jsonl" -size +1M -delete
tar czf "$OUT/$NAME.tar.gz" -C /tmp "$NAME"
ls -la "$OUT"
