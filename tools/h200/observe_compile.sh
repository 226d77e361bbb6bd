#!/usr/bin/env bash
# `argus observe` of a user's Triton kernel inside torch.compile on the H200, from an installed
# wheel of argusdb, with duration, inst_executed, warp_stall_samples and exposed_latency:
# tests/data/programs/compiled_mlp (an MLP block step under @torch.compile whose GELU is the
# user's @triton.jit gelu_kernel) and tests/data/programs/compiled_tuned (a model compiled
# whole whose autotuned SwiGLU Inductor benchmarks), each unmodified, compiled and eagerly
# (TORCHDYNAMO_DISABLE=1) into one store, then `argus diff` between each pair's two versions
# (two binaries of one source): the kernel's duration and the region's asked signals. Packs
# the --json reports, logs, the diffs and each run's task folders as a replay bundle
# (tools/h200/compile_bundles.py) into OUT/compile.tar.gz, and prints the walls and figures.
#
#   bash tools/h200/observe_compile.sh WHEELS_DIR OUT_DIR
#
# WHEELS_DIR holds argus/ and cupti130/ as for observe_programs.sh. Each step has a time limit
# (the whole script stays within ~330 s on the H200; 2026-12-03: 210 s).
set -uo pipefail
source "$(dirname "$0")/common.sh"
WORK=/tmp/compile
T0=$(date +%s.%N)
rm -rf "$WORK" /tmp/progs_compile /tmp/progs_tuned && mkdir -p "$WORK" "$OUT"
wheel_site
cp -r "$ROOT/tests/data/programs/compiled_mlp" /tmp/progs_compile
cp -r "$ROOT/tests/data/programs/compiled_tuned" /tmp/progs_tuned
cd /tmp/progs_compile
sha256sum ./*.py > "$WORK/programs.before.sha256"
python3 -c "import argusdb, torch, triton; print('argusdb from', argusdb.__file__, 'torch',
torch.__version__, 'triton', triton.__version__)" | tee "$WORK/where.txt"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$WORK/nvidia-smi.csv"
echo "setup_s=$(wall "$T0")" | tee -a "$WORK/walls.txt"
S="duration,inst_executed,warp_stall_samples,exposed_latency"
R=gelu/gelu_kernel/load
STORE="$WORK/observe.duckdb"
observe() {  # name, time limit (s), region, command...
  local name=$1 limit=$2 region=$3 t0
  shift 3
  t0=$(date +%s.%N)
  timeout -k 3 "$limit" python3 -m argusdb observe --region "$region" --signals "$S" \
    --store "$STORE" --json -- "$@" > "$WORK/$name.json" 2> "$WORK/$name.log"
  local rc=$?
  echo "$name rc=$rc wall_s=$(wall "$t0")" | tee -a "$WORK/walls.txt"
  tail -n 14 "$WORK/$name.log"
}
observe compiled 100 "$R" python3 mlp.py
observe eager 50 "$R" env TORCHDYNAMO_DISABLE=1 python3 mlp.py
# the two parent versions: the binary each control task found
report() {  # the parent version each control task found, its tasks and launches
  python3 - "$WORK" "$@" <<'PY'
import json, pathlib, sys
work = pathlib.Path(sys.argv[1])
for name in sys.argv[2:]:
    try:
        rep = json.loads((work / f"{name}.json").read_text())
    except (OSError, ValueError):
        print(name, "no report"); continue
    hits = sorted((work / "observe.duckdb.runs").glob(f"{rep.get('plan_id')}*/find_launch/result.json"))
    hits = hits or sorted((work / "observe.duckdb.runs").glob(f"**/{rep.get('plan_id')}*find_launch*/result.json"))
    b = json.loads(hits[0].read_text())["binary"] if hits else {}
    print(name, b.get("hash"), "launcher=" + str(b.get("launcher", "jit")),
          "warps=%s stages=%s" % (b.get("num_warps"), b.get("num_stages")),
          "constexprs=%s" % b.get("constexprs"), "ok=%s" % rep.get("ok"),
          "evidence=%s" % json.dumps(rep.get("evidence")))
    for t in rep.get("tasks", []):
        print("  ", t.get("id"), t.get("status"), round(t.get("wall_s") or 0, 2))
    for f in rep.get("failed", []):
        print("  FAILED", f.get("task"), str(f.get("error"))[:600])
    runs = work / "observe.duckdb.runs"
    for lf in sorted(runs.glob(f"{rep.get('plan_id')}*/find_launch/launch.*.json")):
        doc = json.loads(lf.read_text())
        ind = doc.get("inductor") or {}
        if doc.get("launches") or ind.get("compiled_launches"):
            roles = {}
            for x in doc.get("launches", []):
                key = f"{x['role']}/{x['binary'][:12]}"
                roles[key] = roles.get(key, 0) + 1
            print("  launches", len(doc.get("launches", [])), "roles", roles, "chosen",
                  doc.get("chosen_binary"), "errors", doc.get("errors"),
                  "capture", doc.get("capture"))
            print("  inductor neighbours", {k: v.get("launches")
                                            for k, v in (ind.get("neighbours") or {}).items()},
                  "copies", ind.get("copies"), "inlined", ind.get("inlined_into"))
    for rf in sorted(runs.glob(f"{rep.get('plan_id')}*/*/result.json")):
        r = json.loads(rf.read_text())
        keep = {k: r.get(k) for k in ("stand_in", "rel_err_vs_parent", "replay_fallback",
                                      "median_us", "binary") if r.get(k) is not None}
        print("  ", rf.parent.name, json.dumps(keep, default=str)[:400])
PY
}
report compiled eager | tee "$WORK/binaries.txt"
HC=$(awk '$1=="compiled"{print $2}' "$WORK/binaries.txt")
HE=$(awk '$1=="eager"{print $2}' "$WORK/binaries.txt")
diffs() {  # program (the kernel region's file stem and kernel), name, eager hash, compiled hash
  local t0
  for what in "$1:duration" "$1/load:inst_executed warp_stall_samples exposed_latency"; do
    local region=${what%%:*} sigs=() s
    for s in ${what#*:}; do sigs+=(--signal "$s"); done
    t0=$(date +%s.%N)
    timeout 60 python3 -m argusdb diff "$STORE" --region "$region" --from "binary=$3" \
      --to "binary=$4" "${sigs[@]}" > "$WORK/diff.$2.${region##*/}.txt" 2>&1
    echo "diff $region rc=$? wall_s=$(wall "$t0")" | tee -a "$WORK/walls.txt"
    cat "$WORK/diff.$2.${region##*/}.txt"
  done
}
diffs gelu/gelu_kernel mlp "$(awk '$1=="eager"{print $2}' "$WORK/binaries.txt")" \
  "$(awk '$1=="compiled"{print $2}' "$WORK/binaries.txt")"
# the compiled model whose SwiGLU autotunes (Inductor benchmarks its configs when it compiles)
cd /tmp/progs_tuned
sha256sum ./*.py > "$WORK/programs.tuned.before.sha256"
LEFT=$(python3 -c "print(int(300 - ($(date +%s.%N) - $T0)))")
if [ "$LEFT" -ge 60 ]; then
  observe tuned "$((LEFT > 110 ? 110 : LEFT))" swiglu/swiglu_kernel/load python3 model.py
else
  echo "tuned skipped: ${LEFT} s left of the budget" | tee -a "$WORK/walls.txt"
fi
LEFT=$(python3 -c "print(int(300 - ($(date +%s.%N) - $T0)))")
if [ "$LEFT" -ge 30 ]; then
  observe tuned_eager "$((LEFT > 60 ? 60 : LEFT))" swiglu/swiglu_kernel/load \
    env TORCHDYNAMO_DISABLE=1 python3 model.py
else
  echo "tuned_eager skipped: ${LEFT} s left of the budget" | tee -a "$WORK/walls.txt"
fi
report tuned tuned_eager | tee "$WORK/binaries.tuned.txt"
diffs swiglu/swiglu_kernel tuned "$(awk '$1=="tuned_eager"{print $2}' "$WORK/binaries.tuned.txt")" \
  "$(awk '$1=="tuned"{print $2}' "$WORK/binaries.tuned.txt")"
sha256sum ./*.py > "$WORK/programs.tuned.after.sha256"
cd /tmp/progs_compile
sha256sum ./*.py > "$WORK/programs.after.sha256"
cmp "$WORK/programs.before.sha256" "$WORK/programs.after.sha256" \
  && cmp "$WORK/programs.tuned.before.sha256" "$WORK/programs.tuned.after.sha256" \
  && echo "programs unmodified"
cd /tmp
# each run's task folders as a replay bundle (tests/data/gpu/compile/NAME): no cubins, ncu
# reports or capture bytes; of Inductor's cache the wrapper code alone (gzipped)
find "$WORK" \( -name "*.ncu-rep" -o -name "*.cubin" -o -name "storage.*.bin" \) -delete
python3 "$ROOT/tools/h200/compile_bundles.py" "$WORK" compiled eager tuned tuned_eager
rm -rf "$STORE" "$STORE.wal" "$STORE.runs"
tar czf "$OUT/compile.tar.gz" -C /tmp compile
ls -la "$OUT"
echo "total_s=$(wall "$T0")"
