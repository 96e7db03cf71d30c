#!/usr/bin/env bash
# health_check (native) overlay: removes what install_health_check.sh installed
# (`./benchpress_cli.py clean health_check`). benchpress gives no OUT here, so the install folder
# is found from this script's place in DCPerf (packages/health_check -> benchmarks/health_check).
# Only a folder carrying the install marker is removed, after stopping any client-role responder
# that this install started with --daemon (found by its pid file in the binary's runtime directory,
# or in $TMPDIR where older versions put it, and only if that process runs our installed binary):
# SIGTERM, then SIGKILL after 5 s, and the truth either way (stop-responder.sh does it).
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
# The responders this install started with --daemon, by their pid files: the runtime directory's
# (the binary's rule: $HEALTH_CHECK_RUNTIME_DIR, else /run/health_check as root, else
# $XDG_RUNTIME_DIR/health_check, else /tmp/health_check-<uid>) and, for one release, the old
# default place in $TMPDIR.
if [ -n "${HEALTH_CHECK_RUNTIME_DIR:-}" ]; then
  runtime_dir="$HEALTH_CHECK_RUNTIME_DIR"
elif [ "$(id -u)" -eq 0 ]; then
  runtime_dir=/run/health_check
elif [ -n "${XDG_RUNTIME_DIR:-}" ]; then
  runtime_dir="$XDG_RUNTIME_DIR/health_check"
else
  runtime_dir="/tmp/health_check-$(id -u)"
fi
# stop-responder.sh (beside this script) signals only a process running our installed binary:
# SIGTERM, then SIGKILL after 5 s, and says which it took (or that it could not).
stopper="$here/stop-responder.sh"
status=0
for pid_file in "$runtime_dir"/responder-*.pid "${TMPDIR:-/tmp}"/health_check-responder-*.pid; do
  [ -f "$pid_file" ] || continue
  if [ ! -f "$stopper" ]; then
    echo "cleanup_health_check: $stopper is missing (rerun scripts/install-into-benchpress.sh): cannot stop the responder of $pid_file; $target is kept" >&2
    exit 1
  fi
  if said="$(sh "$stopper" "$pid_file" "$target/health_check" 2>&1)"; then
    # A pid file of another program or install is none of our business: say nothing about it.
    case "$said" in
      *": left alone" | *"nothing to stop"*) ;;
      *) echo "cleanup_health_check: ${said#stop-responder: }" >&2 ;;
    esac
  else
    echo "cleanup_health_check: ${said#stop-responder: }" >&2
    status=1
  fi
done
rm -rf -- "$target"
echo "cleanup_health_check: removed $target" >&2
exit "$status"
