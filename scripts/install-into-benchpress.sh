#!/usr/bin/env bash
# Overlays health_check's four benchpress slots onto a DCPerf checkout:
#   packages/health_check/{install_health_check.sh,cleanup_health_check.sh,run.sh}
#   benchpress/plugins/parsers/health_check.py
# and puts stop-responder.sh beside cleanup_health_check.sh, which calls it.
# DCPerf's own YAML entries stay as they are (our binary takes their argv). DCPerf's originals are
# kept once as *.dcperf-orig. Safe to run again.
#
# Usage: scripts/install-into-benchpress.sh DCPERF_ROOT
set -Eeuo pipefail

die() { echo "install-into-benchpress: error: $*" >&2; exit 1; }

[ $# -eq 1 ] || die "usage: $0 DCPERF_ROOT (the folder holding benchpress_cli.py)"
root="$1"
[ -d "$root" ] || die "'$root' is not a folder"
root="$(cd "$root" && pwd)"
for need in benchpress_cli.py benchpress/plugins/parsers benchpress/config/benchmarks.yml benchpress/config/jobs.yml; do
  [ -e "$root/$need" ] || die "'$root' is not a DCPerf checkout: '$need' is missing"
done

here="$(cd "$(dirname "$(readlink -f "$0")")" && pwd)"
src="$(cd "$here/.." && pwd)"
marker="health_check (native) overlay"

# place FILE DEST: copy FILE to DEST, first keeping a DCPerf original as DEST.dcperf-orig.
place() {
  local file="$1" dest="$2"
  if [ -f "$dest" ] && ! grep -q "$marker" "$dest" && [ ! -e "$dest.dcperf-orig" ]; then
    cp -p "$dest" "$dest.dcperf-orig"
  fi
  cp "$file" "$dest.tmp.$$"
  mv -f "$dest.tmp.$$" "$dest"
}

pkg="$root/packages/health_check"
mkdir -p "$pkg"
for script in install_health_check.sh cleanup_health_check.sh run.sh stop-responder.sh; do
  place "$here/$script" "$pkg/$script"
  chmod +x "$pkg/$script"
done
printf '%s\n' "$src" > "$pkg/health_check.src"
place "$src/benchpress/plugins/parsers/health_check.py" "$root/benchpress/plugins/parsers/health_check.py"

grep -q '^health_check:' "$root/benchpress/config/benchmarks.yml" \
  || echo "install-into-benchpress: warning: benchpress/config/benchmarks.yml has no health_check entry; add the one in $src/jobs/benchmarks.yml" >&2
grep -q 'benchmark: health_check' "$root/benchpress/config/jobs.yml" \
  || echo "install-into-benchpress: warning: benchpress/config/jobs.yml has no health_check job; add the one in $src/jobs/health_check.yml" >&2

cat >&2 <<MSG
install-into-benchpress: health_check overlaid onto $root (source: $src).
Next, from $root:
  ./benchpress_cli.py install health_check
  ./benchpress_cli.py run health_check -r client                        # on each peer
  ./benchpress_cli.py run health_check -r server -i '{"clients": "host1,host2"}'
MSG
