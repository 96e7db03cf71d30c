#!/usr/bin/env bash
# health_check (native) overlay: builds health_check from its source checkout and installs it into
# $OUT for benchpress (`./benchpress_cli.py install health_check`).
#
#   OUT               where to install (benchpress sets it to <DCPerf>/benchmarks/health_check)
#   HEALTH_CHECK_SRC  the health_check checkout (default: recorded by install-into-benchpress.sh,
#                     else the checkout this script lives in)
#   HEALTH_CHECK_BINARY  a health_check binary built elsewhere, installed as it is instead of
#                     building (machines without cargo or crates.io; the tests' own build)
#
# Needs cargo and the crates.io registry (unless HEALTH_CHECK_BINARY is given); no sudo. Safe to
# run again (benchpress install -f).
set -Eeuo pipefail

die() { echo "install_health_check: error: $*" >&2; exit 1; }

here="$(cd "$(dirname "$(readlink -f "$0")")" && pwd)"
src="${HEALTH_CHECK_SRC:-}"
if [ -z "$src" ] && [ -f "$here/health_check.src" ]; then
  src="$(cat "$here/health_check.src")"
fi
[ -n "$src" ] || src="$(cd "$here/.." && pwd)"
if ! grep -qs '^name = "health-check"' "$src/Cargo.toml"; then
  die "no health_check checkout at '$src'; set HEALTH_CHECK_SRC=/path/to/health_check"
fi

if [ -z "${OUT:-}" ]; then
  # Run by hand inside DCPerf (packages/health_check): install where benchpress would.
  root="$(cd "$here/../.." && pwd)"
  [ -f "$root/benchpress_cli.py" ] || die "OUT is not set; run through './benchpress_cli.py install health_check' or set OUT=/install/dir"
  OUT="$root/benchmarks/health_check"
fi

if [ -n "${HEALTH_CHECK_BINARY:-}" ]; then
  binary="$HEALTH_CHECK_BINARY"
  { [ -f "$binary" ] && [ -x "$binary" ]; } || die "HEALTH_CHECK_BINARY='$binary' is not an executable file"
  "$binary" --version >/dev/null 2>&1 \
    || die "HEALTH_CHECK_BINARY='$binary' does not run here ('$binary --version' failed): build it for this machine"
  echo "install_health_check: installing $binary (HEALTH_CHECK_BINARY; nothing is built)" >&2
else
  command -v cargo >/dev/null 2>&1 \
    || die "cargo not found: install Rust 1.85 or newer (https://rustup.rs or your distribution's cargo package), then run the install again, or set HEALTH_CHECK_BINARY to a health_check built elsewhere"
  echo "install_health_check: building $src (cargo build --release --locked)" >&2
  cargo build --release --locked --manifest-path "$src/Cargo.toml" >&2
  target_dir="${CARGO_TARGET_DIR:-$src/target}"
  binary="$target_dir/release/health_check"
  [ -x "$binary" ] || die "cargo finished but '$binary' is missing"
fi

mkdir -p "$OUT"
# Copy then rename, so a running health_check is never overwritten in place.
install -m 0755 "$binary" "$OUT/.health_check.new"
mv -f "$OUT/.health_check.new" "$OUT/health_check"
install -m 0755 "$here/run.sh" "$OUT/.run.sh.new"
mv -f "$OUT/.run.sh.new" "$OUT/run.sh"
printf '%s\n' "$src" > "$OUT/.installed-by-health_check"
echo "install_health_check: installed $("$OUT/health_check" --version) into $OUT" >&2
