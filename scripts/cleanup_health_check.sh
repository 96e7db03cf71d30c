#!/usr/bin/env bash
# health_check (native) overlay: removes what install_health_check.sh installed
# (`./benchpress_cli.py clean health_check`). benchpress gives no OUT here, so the install folder
# is found from this script's place in DCPerf (packages/health_check -> benchmarks/health_check).
# Only a folder carrying the install marker is removed, after stopping any client-role responder
# that this install started with --daemon (found by its pid file in $TMPDIR, and only if that
# process runs our installed binary).
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
for pid_file in "${TMPDIR:-/tmp}"/health_check-responder-*.pid; do
  [ -f "$pid_file" ] || continue
  pid="$(cat "$pid_file" 2>/dev/null || true)"
  case "$pid" in '' | *[!0-9]*) continue ;; esac
  exe="$(readlink "/proc/$pid/exe" 2>/dev/null || true)"
  if [ "${exe% (deleted)}" = "$target/health_check" ]; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in 1 2 3 4 5 6 7 8 9 10; do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.5
    done
    echo "cleanup_health_check: stopped the responder (pid $pid)" >&2
  fi
done
rm -rf -- "$target"
echo "cleanup_health_check: removed $target" >&2
