#!/usr/bin/env bash
# Copy this checkout's tracked and untracked (not ignored) files into DEST, with the wheels of
# WHEELS (argus/, cupti130/) under DEST/.whl: what tools/h200/ab.sh needs on the GPU machine
# (tests/data stays behind: nothing there needs it).
#   bash tools/h200/ab_stage.sh DEST WHEELS
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DEST=${1:?dest}; WHL=${2:?wheels}
rm -rf "$DEST" && mkdir -p "$DEST/.whl"
(cd "$ROOT" && git ls-files -co --exclude-standard -z -- . ":!tests/data" | tar --null -T - -cf -) \
  | tar -xf - -C "$DEST"
cp -r "$WHL/argus" "$WHL/cupti130" "$DEST/.whl/"
du -sh "$DEST"
