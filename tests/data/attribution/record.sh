#!/bin/bash
# Records the layernorm artefacts of tests/data/attribution/ on an H200 (run from the repo root;
# writes to $OUT/attribution). Two Nsight Compute runs of the same program version: 'full' (the
# measured run) and 'counts' (SourceCounters only: the independent mapping run).
set -euo pipefail
D=$OUT/attribution; mkdir -p "$D"
cd tests/data/attribution/kernels
cat > /tmp/drive_layernorm.py <<'PY'
import sys
sys.path.insert(0, ".")
import layernorm
k, err = layernorm.run()
print("rel_err", err)
if len(sys.argv) > 1:
    open(sys.argv[1] + "/layernorm.ttgir", "w").write(k.asm["ttgir"])
    open(sys.argv[1] + "/layernorm.cubin", "wb").write(k.asm["cubin"])
PY
python /tmp/drive_layernorm.py "$D"
ncu --clock-control none --set full -k layernorm_fwd --launch-skip 2 --launch-count 1 \
    -f -o "$D/full" python /tmp/drive_layernorm.py
ncu --clock-control none --section SourceCounters -k layernorm_fwd --launch-skip 3 \
    --launch-count 1 -f -o "$D/counts" python /tmp/drive_layernorm.py
ncu -i "$D/full.ncu-rep" --page source --csv --print-source cuda,sass > "$D/layernorm.source.csv"
ncu -i "$D/counts.ncu-rep" --page source --csv --print-source cuda,sass \
    > "$D/layernorm.counts.source.csv"
ncu -i "$D/full.ncu-rep" --page raw --csv > "$D/layernorm.raw.csv"
nvdisasm -g -c "$D/layernorm.cubin" > "$D/layernorm.sass"
ncu --version | tail -1 > "$D/versions.txt"
python -c "import triton, torch; print('triton', triton.__version__, 'torch', torch.__version__)" >> "$D/versions.txt"
rm -f "$D"/*.ncu-rep
