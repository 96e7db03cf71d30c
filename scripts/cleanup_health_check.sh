#!/usr/bin/env bash
# health_check (native) overlay: removes what install_health_check.sh installed
# (`./benchpress_cli.py clean health_check`). benchpress gives no OUT here, so the install folder
# is found from this script's place in DCPerf (packages/health_check -> benchmarks/health_check).
# Only a folder carrying the install marker is removed, after stopping any client-role responder
# that this install started with --daemon (found by its pid file in $TMPDIR, and only if that
# process runs our installed binary): SIGTERM, then SIGKILL after 5 s, and the truth either way.
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
# Alive and not a zombie (an exited daemon whose new parent does not reap it is stopped).
alive() {
  local state
  state="$(sed -E 's/.*\) (.).*/\1/' "/proc/$1/stat" 2>/dev/null || true)"
  [ -n "$state" ] && [ "$state" != Z ]
}
# Waits up to $2 half-seconds for pid $1 to end.
ended_within() {
  for _ in $(seq "$2"); do
    alive "$1" || return 0
    sleep 0.5
  done
  ! alive "$1"
}
status=0
for pid_file in "${TMPDIR:-/tmp}"/health_check-responder-*.pid; do
  [ -f "$pid_file" ] || continue
  pid="$(cat "$pid_file" 2>/dev/null || true)"
  case "$pid" in '' | *[!0-9]*) continue ;; esac
  exe="$(readlink "/proc/$pid/exe" 2>/dev/null || true)"
  if [ "${exe% (deleted)}" = "$target/health_check" ]; then
    kill -TERM "$pid" 2>/dev/null || true
    if ended_within "$pid" 10; then
      echo "cleanup_health_check: stopped the responder (pid $pid)" >&2
    else
      kill -KILL "$pid" 2>/dev/null || true
      if ended_within "$pid" 4; then
        echo "cleanup_health_check: the responder (pid $pid) ignored SIGTERM for 5 s; killed it with SIGKILL" >&2
      else
        echo "cleanup_health_check: could not stop the responder (pid $pid), even with SIGKILL; it may be stuck in the kernel: see /proc/$pid/stack, or reboot" >&2
        status=1
        continue
      fi
    fi
    rm -f -- "$pid_file"
  fi
done
rm -rf -- "$target"
echo "cleanup_health_check: removed $target" >&2
exit "$status"
