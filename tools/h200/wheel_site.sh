# Sourced by the tools/h200 scripts that run argusdb from an installed wheel, not the checkout:
# installs the carried wheels of WHEELS_DIR (argus/: duckdb, sqlglot, ijson; cupti130/:
# cupti-python 13.0.1, pyelftools; see bench/gpu/README.md) into /tmp/site_<name>, builds the
# wheel of the checkout at ROOT into /tmp/site_argusdb, puts them on PYTHONPATH and copies the
# user programs of tests/data/programs/ to /tmp/progs.
#
#   ROOT=... WHL=... ; source "$ROOT/tools/h200/wheel_site.sh"
rm -rf /tmp/progs /tmp/site_argusdb /tmp/argus_wheel && mkdir -p /tmp/progs
for w in argus cupti130; do
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "/tmp/site_$w" "$WHL/$w"/*.whl || exit 1
done
python3 -m pip wheel -q --no-deps --no-build-isolation -w /tmp/argus_wheel "$ROOT" || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site_argusdb \
  /tmp/argus_wheel/argusdb-*.whl || exit 1
export PYTHONPATH="/tmp/site_argusdb:/tmp/site_argus" ARGUS_GPU_SITE=/tmp/site_cupti130
export PYTHONUNBUFFERED=1
cp -r "$ROOT/tests/data/programs/." /tmp/progs/
