#!/usr/bin/env bash
# Runs every test: formatting, lints, Rust unit and integration tests, docs, the Python parser
# and contract harness, shellcheck. Installs what the tests need first (pip and apt packages),
# so it works on a fresh machine with Rust and Python 3.
#
# Python tools go into a virtual environment (target/test-venv), never into the system Python:
# distributions that enforce PEP 668 refuse system-wide pip installs.
#
# Usage: scripts/test.sh            everything
#        SKIP_INSTALL=1 scripts/test.sh   skip the package installation step
#        HEALTH_CHECK_TEST_REQUIRE_ALL=1 scripts/test.sh   a test whose prerequisite (root, a tool) is
#                                          missing fails instead of skipping (CI sets this)
set -Eeuo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."

# Each step says when it started (seconds since the script began): the suite's time budget is
# spent where these stamps say.
step() { printf '\n==> [%ss] %s\n' "$SECONDS" "$*" >&2; }

VENV="$PWD/target/test-venv"
PY="$VENV/bin/python"

apt_install() {
  [ $# -gt 0 ] || return 0
  local sudo=()
  [ "$(id -u)" -eq 0 ] || sudo=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get install -y --no-install-recommends "$@" >/dev/null 2>&1 \
    || { "${sudo[@]}" apt-get update >/dev/null && "${sudo[@]}" apt-get install -y --no-install-recommends "$@" >/dev/null; }
}

make_venv() {
  [ -x "$PY" ] && return 0
  python3 -m venv "$VENV" 2>/dev/null || { apt_install python3-venv && python3 -m venv "$VENV"; }
}

install_deps() {
  step "installing test tools (venv: pytest jsonschema pyyaml ruff playwright prometheus-client ansible-core ansible-lint kubernetes-validate; apt: gcc shellcheck iperf3 fio iproute2 iputils-ping e2fsprogs mount qemu-user gcc-aarch64-linux-gnu chromium openssh-server openssh-client systemd prometheus slurmctld slurmd slurm-client munge; rustup: aarch64 and macOS targets)"
  make_venv
  # playwright drives Debian's Chromium (it never downloads a browser of its own here).
  "$PY" -m pip install --quiet --disable-pip-version-check \
    'pytest>=8' 'jsonschema>=4.18' 'pyyaml>=6' 'ruff==0.17.6' 'playwright>=1.49' 'prometheus-client>=0.20' 'ansible-core>=2.17' 'ansible-lint==26.10.1' 'kubernetes-validate>=1.31'
  local missing=() pair
  # tool (or file it installs):Debian package
  for pair in cc:gcc shellcheck:shellcheck iperf3:iperf3 fio:fio ip:iproute2 tc:iproute2 ss:iproute2 \
    ping:iputils-ping mkfs.ext4:e2fsprogs losetup:mount qemu-aarch64:qemu-user \
    aarch64-linux-gnu-gcc:gcc-aarch64-linux-gnu /usr/aarch64-linux-gnu/lib/crt1.o:libc6-dev-arm64-cross \
    chromium:chromium /usr/sbin/sshd:openssh-server ssh:openssh-client \
    systemd-analyze:systemd promtool:prometheus slurmctld:slurmctld slurmd:slurmd scontrol:slurm-client \
    munged:munge; do
    command -v "${pair%%:*}" >/dev/null 2>&1 || [ -e "${pair%%:*}" ] || missing+=("${pair#*:}")
  done
  apt_install "${missing[@]}"
  # The aarch64 kernels are tested under qemu-user; macOS is only compiled ("unsupported" there).
  rustup target add aarch64-unknown-linux-gnu x86_64-apple-darwin >/dev/null 2>&1
}

[ -n "${SKIP_INSTALL:-}" ] || install_deps

step "cargo fmt --check"
cargo fmt --check
step "cargo clippy --all-targets --locked -- -D warnings"
cargo clippy --all-targets --locked -- -D warnings
# The tests run the release build (the binary they run is the one shipped, and the dev profile
# would compile every dependency a second time).
step "cargo build --release --locked"
cargo build --release --locked
step "cargo test --release --locked"
cargo test --release --locked
step "cargo test --lib on aarch64 (qemu-user)"
CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc \
  CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -L /usr/aarch64-linux-gnu" \
  cargo test --locked --lib --target aarch64-unknown-linux-gnu
step "cargo check on macOS (other systems compile and report unsupported)"
cargo check --locked --target x86_64-apple-darwin
step "cargo doc"
RUSTDOCFLAGS="-D warnings" cargo doc --no-deps --document-private-items --locked --quiet
step "ruff check and ruff format --check: benchpress tests benchmarks ansible"
"$VENV/bin/ruff" check benchpress tests benchmarks ansible
"$VENV/bin/ruff" format --check benchpress tests benchmarks ansible
step "shellcheck scripts/*.sh ansible/*.sh .ci/run deploy/slurm/health_check-slurm"
shellcheck scripts/*.sh ansible/*.sh .ci/run deploy/slurm/health_check-slurm
shellcheck --shell=sh deploy/slurm/health_check.default
step "ansible-lint --profile production (ansible/)"
(cd ansible && PATH="$VENV/bin:$PATH" ansible-lint --offline --profile production)
step "pytest tests/python"
HEALTH_CHECK_BIN="$PWD/target/release/health_check" "$PY" -m pytest -q tests/python
step "all tests passed"
