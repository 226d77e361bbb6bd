# Sourced first by the tools/h200 scripts (called as "bash tools/h200/NAME.sh WHEELS_DIR OUT_DIR
# ..."): sets ROOT (the checkout), WHL (WHEELS_DIR, absolute) and OUT, and defines the steps
# they share. WHEELS_DIR holds the carried wheels (argus/: duckdb, sqlglot, ijson; cupti130/:
# cupti-python 13.0.1, pyelftools; cupti134/; see bench/gpu/README.md).
#
#   source "$(dirname "$0")/common.sh"
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
WHL=$(cd "${1:?wheels dir}" && pwd)
OUT=${2:?out dir}

# requests REQUESTS_FILE: REQS (the file, absolute), NAME (its stem) and an emptied WORK=/tmp/NAME
# (OUT made too), for the scripts that observe the requests of a list.
requests() {
  REQS=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
  NAME=$(basename "$REQS" .txt)
  WORK=/tmp/$NAME
  rm -rf "$WORK" && mkdir -p "$WORK" "$OUT"
}

# wall T0: seconds since T0 (a `date +%s.%N`), to two places.
wall() { python3 -c "print(round($(date +%s.%N) - $1, 2))"; }

# install_wheels NAME...: the wheels of WHEELS_DIR/NAME/ into /tmp/site_NAME.
install_wheels() {
  local w
  for w in "$@"; do
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target "/tmp/site_$w" "$WHL/$w"/*.whl || exit 1
  done
}

# wheel_site: argusdb from an installed wheel, not the checkout. Installs the argus/ and
# cupti130/ wheels, builds the wheel of the checkout at ROOT into /tmp/site_argusdb and puts
# them on PYTHONPATH (cupti130 as the GPU worker's site).
wheel_site() {
  rm -rf /tmp/site_argusdb /tmp/argus_wheel
  install_wheels argus cupti130
  python3 -m pip wheel -q --no-deps --no-build-isolation -w /tmp/argus_wheel "$ROOT" || exit 1
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site_argusdb \
    /tmp/argus_wheel/argusdb-*.whl || exit 1
  export PYTHONPATH="/tmp/site_argusdb:/tmp/site_argus" ARGUS_GPU_SITE=/tmp/site_cupti130
  export PYTHONUNBUFFERED=1
}

# copy_programs: the user programs of tests/data/programs/ to /tmp/progs.
copy_programs() {
  rm -rf /tmp/progs && mkdir -p /tmp/progs
  cp -r "$ROOT/tests/data/programs/." /tmp/progs/
}

# where WORK: which argusdb runs, into WORK/where.txt (and stdout), and on which GPU, into
# WORK/nvidia-smi.csv.
where() {
  python3 -c "import argusdb; print('argusdb from', argusdb.__file__)" | tee "$1/where.txt"
  nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$1/nvidia-smi.csv"
}
