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
  step "installing test tools (venv: pytest jsonschema pyyaml ruff playwright prometheus-client ansible-core ansible-lint kubernetes-validate; apt: gcc shellcheck iperf3 fio iproute2 iputils-ping e2fsprogs mount qemu-user gcc-aarch64-linux-gnu chromium openssh-server openssh-client systemd prometheus slurmctld slurmd slurm-client munge)"
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
}

# A step can run in the background, its output in target/test-logs/NAME.log, shown when it is
# waited for. Only while nothing measures: the tests' figures need the CPUs, and the binary counts
# other processes' CPU time as interference (a niced compile too).
LOGS="$PWD/target/test-logs"
mkdir -p "$LOGS"
declare -A BG=()
bg_start() { # NAME COMMAND...: start in the background
  local name=$1
  shift
  "$@" >"$LOGS/$name.log" 2>&1 &
  BG[$name]=$!
}
kill_tree() { # PID: it and everything it started (a process that has ended has no children)
  local children=() child
  read -r -a children < <(cat /proc/"$1"/task/*/children 2>/dev/null) || true
  for child in "${children[@]}"; do kill_tree "$child"; done
  kill "$1" 2>/dev/null || true
}
# A suite that stops early (a failure, Ctrl-C) leaves nothing running behind it.
bg_stop_all() {
  local pid
  for pid in "${BG[@]}"; do kill_tree "$pid"; done
}
trap bg_stop_all EXIT
bg_wait() { # NAME: wait for it; print its output; fail the suite with it
  local name=$1 rc=0
  wait "${BG[$name]}" || rc=$?
  step "$name (ran in the background; exit $rc)"
  cat "$LOGS/$name.log" >&2
  # Single quotes: the name is expanded once, as a key (a name with a quote in it stays whole).
  unset 'BG[$name]'
  [ "$rc" -eq 0 ] || { echo "FAILED: $name (exit $rc)" >&2; exit "$rc"; }
}

# The order follows what each step needs of the machine. Compiling keeps both CPUs busy, the tests
# that measure need them quiet, and pytest's tests (Ansible's round trips, Slurm's intervals,
# responders' grace periods) leave them idle a third of the time, their real runs lifting the
# interference limits. So: the release build beside the package installation (mostly downloads);
# then the Rust tests that compare figures with references: the accuracy tests (beside the unit
# tests' build, at the lowest priority, in the CPU they leave idle) and the degraded fleet
# alone; then the integration tests and pytest beside every other build (lints, macOS, the
# shipped features, docs, aarch64); last, the aarch64 tests under qemu-user.
step "rustup target add aarch64-unknown-linux-gnu x86_64-apple-darwin; cargo fmt --all --check"
rustup target add aarch64-unknown-linux-gnu x86_64-apple-darwin >/dev/null 2>&1
cargo fmt --all --check

# The library's unit tests (the judge, the parsers, the kernels' own checks: logic that runs in
# seconds) with our crate unoptimised: optimised, they cost as much again as the library to
# compile (about 150 CPU-s here); unoptimised 25 CPU-s, and they still run in about 3 s. Then the
# binary and the tests that run it, optimised: the shipped binary itself (the check of the shipped
# set below holds it so). Only our crates are built twice: the dependencies are the release
# build's own.
# Every crate of the workspace (the floors, docs/architecture.md), each unoptimised for its tests.
OUR_CRATES=(health-check health-check-base health-check-measure health-check-wire health-check-nhc
  health-check-history health-check-judge health-check-render health-check-app)
unoptimised() { # PROFILE: --config arguments building our crates at opt-level 0
  local c
  for c in "${OUR_CRATES[@]}"; do printf '%s\n' --config "profile.$1.package.$c.opt-level=0"; done
}
mapfile -t RELEASE_UNOPTIMISED < <(unoptimised release)
mapfile -t DEV_UNOPTIMISED < <(unoptimised dev)
UNIT_TESTS=(cargo test --release --locked --workspace --lib "${RELEASE_UNOPTIMISED[@]}")
RUN_TESTS=(cargo test --release --locked --bins --test '*')
# The tests' build with fault injection (examples/health_check_with_faults.rs): an example, so it
# links against the library the tests already built (examples turn on the dev-dependencies'
# features too) and never ships.
FAULTY_BUILD=(cargo build --release --locked --example health_check_with_faults)
release_build() {
  "${RUN_TESTS[@]}" --no-run
  "${FAULTY_BUILD[@]}"
  # The test executables, run without cargo below: a cargo command holds the build directory's
  # lock while its tests run, and the builds beside them need it.
  "${RUN_TESTS[@]}" --no-run --message-format=json 2>/dev/null >"$LOGS/test-build.json"
  local t
  for t in accuracy fleet_degraded integration; do
    sed -n "s/.*\"executable\":\"\\([^\"]*\\/$t-[0-9a-f]*\\)\".*/\\1/p" "$LOGS/test-build.json" >"$LOGS/$t-executable"
    [ -s "$LOGS/$t-executable" ]
  done
}
if [ -n "${SKIP_INSTALL:-}" ]; then
  step "release build"
  release_build
else
  bg_start "release build" release_build
  install_deps
  step "test tools installed; waiting for the release build"
  bg_wait "release build"
fi

# Each test's time (libtest's --report-time) and the slowest 20 after each step. The stable test
# harness takes the flag under RUSTC_BOOTSTRAP, given to the test processes alone through a
# runner: set for cargo itself, it would build our crates again.
HOST_TRIPLE=$(rustc -vV | sed -n 's/^host: //p')
TIMED=(env "CARGO_TARGET_$(printf '%s' "$HOST_TRIPLE" | tr 'a-z-' 'A-Z_')_RUNNER=env RUSTC_BOOTSTRAP=1")
TIMES=(-- -Z unstable-options --report-time)
slowest_rust() { # LOG: the 20 slowest tests in it
  printf '\nslowest 20 tests:\n' >&2
  sed -nE 's/^test (.*) \.\.\. [a-zA-Z]+ <([0-9.]+)s>$/\2s \1/p' "$1" | sort -rn | head -20 >&2 || true
}
# A test executable, timed, as cargo runs it (from the package's directory, the harness's flags
# after the test name). Output goes to the terminal through tee in a process substitution: a pipe
# into tee would wait for every process still holding the test's stdout, and a test's leftover
# child held it 24 s.
run_tests() { # NAME LOG
  env RUSTC_BOOTSTRAP=1 "$(cat "$LOGS/$1-executable")" -Z unstable-options --report-time \
    > >(tee "$2") 2>&1
  sleep 1 # tee's last lines
  slowest_rust "$2"
}
# The unit tests' build (our crates unoptimised; they run with the checks below), at the lowest
# priority beside the accuracy tests: those measure one CPU's worth most of the time, and each
# ratio is of interleaved pairs, ours and the C reference's, so load beside them falls on both
# alike. The build takes the idle CPU (about half of it; 60 s of wall time of the suite).
unit_tests_build() {
  renice -n 19 -p "$BASHPID" >/dev/null
  export CARGO_INCREMENTAL=0
  "${UNIT_TESTS[@]}" --no-run
}
bg_start "the unit tests' build" unit_tests_build
step "the accuracy tests (beside, at low priority: the unit tests' build)"
run_tests accuracy "$LOGS/accuracy-tests.log"
bg_wait "the unit tests' build"
# The degraded fleet alone: its verdicts are that healthy runs, one after another, are alike.
step "the degraded fleet (alone)"
run_tests fleet_degraded "$LOGS/fleet-degraded-tests.log"

# The floors with architecture code (the memory kernels, the OS calls: crates/measure and
# crates/base) unoptimised for aarch64: their tests take seconds under qemu. The floors above have
# no architecture code (tests/integration/layers.rs holds them to that), so neither they nor their
# dependencies (the bundled SQLite's C among them) are built for aarch64: that was 170 s here.
AARCH64_TESTS=(cargo test --locked --lib --target aarch64-unknown-linux-gnu
  -p health-check-base -p health-check-measure "${DEV_UNOPTIMISED[@]}")
export CARGO_PROFILE_DEV_DEBUG=0 \
  CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc \
  CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER="qemu-aarch64 -L /usr/aarch64-linux-gnu"
CHECKS="unit tests; clippy; macOS; shipped features; docs; ruff; shellcheck; ansible-lint; aarch64 unit tests and lints"
checks_and_cross_builds() {
  # At the lowest priority: they take the CPU time pytest's tests leave idle, and give way
  # whenever a test wants it (its deadlines and links' figures stay those of a quiet machine).
  renice -n 19 -p "$BASHPID" >/dev/null
  # Each of these builds starts from nothing in CI: incremental state would only cost its writing.
  export CARGO_INCREMENTAL=0
  # The unit tests (the judge, the parsers, the kernels' own checks: logic that runs in seconds)
  # assert no speed: they run here, off the critical path.
  step "cargo test --release --workspace --lib (our crates unoptimised, built beside the accuracy tests)"
  "${TIMED[@]}" "${UNIT_TESTS[@]}" "${TIMES[@]}" >"$LOGS/unit-tests.log" 2>&1 \
    || { cat "$LOGS/unit-tests.log"; return 1; }
  grep -E '^test result|FAILED|panicked' "$LOGS/unit-tests.log" || true
  slowest_rust "$LOGS/unit-tests.log"
  # The checks below take the release profile: their proc macros and build scripts (the bundled
  # SQLite's C among them) are then the release build's own, not built again for the dev
  # profile: 110 CPU-s for the four instead of 149 here (nothing in the code depends on
  # debug_assertions, so the lints see the same code).
  step "cargo clippy --release --workspace --all-targets"
  cargo clippy --release --workspace --all-targets --locked -- -D warnings
  # The macOS build compiles and reports the Linux-only parts unsupported.
  step "cargo check --release --target x86_64-apple-darwin"
  cargo check --release --locked --workspace --target x86_64-apple-darwin
  # The binary the tests ran is the one that ships: its features are the tests' (the root
  # package's "workspace hack", Cargo.toml), so the shipped build compiles nothing.
  step "cargo build --release (the shipped set: nothing left to compile)"
  local shipped
  shipped=$(cargo build --release --locked 2>&1)
  if grep -E '^ *Compiling ' <<<"$shipped"; then
    echo "FAILED: the shipped build compiled the crates above: the tests' dependencies turn on" \
      "features the binary does not; add them to the root package's [dependencies] (Cargo.toml)" >&2
    return 1
  fi
  step "cargo doc --release"
  RUSTDOCFLAGS="-D warnings" cargo doc --release --workspace --no-deps --document-private-items --locked --quiet
  step "ruff check and ruff format --check: benchpress tests benchmarks ansible"
  "$VENV/bin/ruff" check benchpress tests benchmarks ansible
  "$VENV/bin/ruff" format --check benchpress tests benchmarks ansible
  step "shellcheck scripts/*.sh ansible/*.sh .ci/run deploy/slurm/health_check-slurm"
  shellcheck scripts/*.sh ansible/*.sh .ci/run deploy/slurm/health_check-slurm
  shellcheck --shell=sh deploy/slurm/health_check.default
  step "ansible-lint --profile production (ansible/)"
  (cd ansible && PATH="$VENV/bin:$PATH" ansible-lint --offline --profile production)
  step "cargo test --lib on aarch64 (qemu-user)"
  "${AARCH64_TESTS[@]}"
  # The aarch64 kernels (NEON, SVE) are code the x86_64 lints never see.
  step "cargo clippy --lib --tests for aarch64 (crates/base, crates/measure)"
  cargo clippy --locked --lib --tests --target aarch64-unknown-linux-gnu \
    -p health-check-base -p health-check-measure "${DEV_UNOPTIMISED[@]}" -- -D warnings
}
# The integration tests assert what runs do (their figures judged with the interference limits
# lifted where they measure); pytest's modules that assert what runs wrote (the benchpress
# contract, the NHC replay, the parser, the exports) run beside them, at the lowest priority, in
# the CPU time they leave idle. Each pytest process has a temporary directory
# of its own.
PYTEST_FLEET=(tests/python/test_fleet_ansible.py)
PYTEST_FLEET2=(tests/python/test_fleet_safety.py tests/python/test_html_report.py)
PYTEST_SLURM=(tests/python/test_slurm.py tests/python/test_slurm_cap.py tests/python/test_deploy.py
  tests/python/test_install_role.py)
PYTEST_OTHERS=(tests/python/test_contract.py tests/python/test_nhc_differential.py
  tests/python/test_parser.py tests/python/test_exports.py tests/python/test_fleet_page_scale.py)
for f in tests/python/test_*.py; do
  [[ " ${PYTEST_FLEET[*]} ${PYTEST_FLEET2[*]} ${PYTEST_SLURM[*]} ${PYTEST_OTHERS[*]} " == *" $f "* ]] \
    || { echo "FAILED: $f is in neither pytest group (scripts/test.sh)" >&2; exit 1; }
done
PYTEST=(env HEALTH_CHECK_BIN="$PWD/target/release/health_check" "$PY" -m pytest -q -rs --durations=20)
PYTEST_TMP=$(mktemp -d /tmp/hc-pytest.XXXXXX)
pytest_others() {
  renice -n 19 -p "$BASHPID" >/dev/null
  "${PYTEST[@]}" --basetemp "$PYTEST_TMP/others" "${PYTEST_OTHERS[@]}"
}
bg_start "$CHECKS" checks_and_cross_builds
bg_start "pytest (what runs wrote)" pytest_others
step "the integration tests (beside, at low priority: pytest's other modules; $CHECKS)"
run_tests integration "$LOGS/integration-tests.log"

# pytest's modules whose verdicts rest on figures measured now, at normal priority: the Ansible
# fleet's shaped links one test at a time. Beside them a second fleet of namespaces runs the
# playbook's tests that measure nothing (dry runs, unsafe work directories, check mode), then the
# fleet page's runs (memory and sleep, a bandwidth rule of 65 % on them): most of a playbook's
# time is Ansible's round trips, and one fleet after the other left the CPUs two-thirds idle for
# the suite's last 70 s; two fleets' transfers at once starved one to a seventh of its shaped
# rate, so only one fleet measures links.
# Beside them too Slurm's (its health checks lift the interference limits, and its busy node
# wants the load), the deployment's (its interference test brings its own burner) and the
# install role's (an Ansible run on a host of its own that measures nothing).
pytest_slurm() {
  "${PYTEST[@]}" --basetemp "$PYTEST_TMP/slurm" "${PYTEST_SLURM[@]}"
}
pytest_fleet2() {
  "${PYTEST[@]}" --basetemp "$PYTEST_TMP/fleet2" "${PYTEST_FLEET2[@]}"
}
bg_start "pytest (Slurm, deployment, install)" pytest_slurm
bg_start "pytest (the second fleet: dry runs, work directories, check mode; the fleet page)" pytest_fleet2
step "pytest: the Ansible fleet (beside: the second fleet and the fleet page; Slurm's, the deployment's, the install role's; what is left of $CHECKS)"
# The Ansible fleet is the suite's critical path (its module ends last): as root its processes
# (the playbooks, the hosts' sshd and runs) take precedence over the groups beside it, which
# have time to spare, and its shaped transfers keep their rate.
FLEET_FIRST=()
[ "$(id -u)" -ne 0 ] || FLEET_FIRST=(nice -n -5)
"${FLEET_FIRST[@]}" "${PYTEST[@]}" --basetemp "$PYTEST_TMP/fleet" "${PYTEST_FLEET[@]}"
bg_wait "pytest (the second fleet: dry runs, work directories, check mode; the fleet page)"
bg_wait "pytest (Slurm, deployment, install)"
# At the lowest priority, what is left of them gives way to the fleet's tests.
bg_wait "pytest (what runs wrote)"
rm -rf "$PYTEST_TMP"
bg_wait "$CHECKS"
# Every background step was waited for (the exit trap would otherwise stop what is left).
[ "${#BG[@]}" -eq 0 ] || { echo "FAILED: never waited for: ${!BG[*]}" >&2; exit 1; }

step "all tests passed"
