#!/usr/bin/env bash
# health_check (native) overlay: removes what install_health_check.sh installed
# (`./benchpress_cli.py clean health_check`). benchpress gives no OUT here, so the install folder
# is found from this script's place in DCPerf (packages/health_check -> benchmarks/health_check).
# Only a folder carrying the install marker is removed.
set -Eeuo pipefail

here="$(cd "$(dirname "$(readlink -f "$0")")" && pwd)"
root="$(cd "$here/../.." && pwd)"
target="${OUT:-$root/benchmarks/health_check}"

if [ ! -e "$target" ]; then
  echo "cleanup_health_check: nothing to remove at $target" >&2
  exit 0
fi
if [ ! -f "$target/.installed-by-health_check" ]; then
  echo "cleanup_health_check: left $target alone: health_check's installer did not create it (remove it by hand if it is DCPerf's own install)" >&2
  exit 0
fi
rm -rf -- "$target"
echo "cleanup_health_check: removed $target" >&2
