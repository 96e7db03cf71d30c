#!/usr/bin/env bash
# Mutation testing of the code that decides verdicts (issue 22.5): cargo-mutants changes one
# thing at a time (a comparison turned around, a return value replaced, an arm deleted) in the
# judge and the figure conversions, and runs the library's tests against each change. A mutant
# the tests do not catch is a verdict the suite does not hold. Not in CI: it builds and tests once
# per mutant (unoptimised, about 8 s a mutant here: the judge's few hundred take about an hour on
# two CPUs). Results: docs/testing.md.
#
# Usage: scripts/mutants.sh                 every file below
#        scripts/mutants.sh crates/judge/src/judge/reference.rs ...   only these files
#        MUTANTS_JOBS=2 scripts/mutants.sh   parallel builds (each needs its own copy of target/)
#        MUTANTS_OUTPUT=target/mutants-2 scripts/mutants.sh ...   keep an earlier run's results
#        MUTANTS_AGAIN="target/mutants-1 target/mutants-2" scripts/mutants.sh ...
#                                            only the mutants those runs missed (by file, function
#                                            and change: their lines may have moved since)
set -Eeuo pipefail
cd "$(dirname "$(readlink -f "$0")")/.."

if ! cargo mutants --version >/dev/null 2>&1; then
  echo "installing cargo-mutants from crates.io" >&2
  cargo install --locked cargo-mutants
fi
cargo mutants --version >&2

files=("$@")
if [ ${#files[@]} -eq 0 ]; then
  files=(
    crates/judge/src/judge/reference.rs
    crates/judge/src/judge/noise.rs
    crates/judge/src/judge/past.rs
    crates/judge/src/judge/drift.rs
    crates/judge/src/judge/health.rs
    crates/judge/src/judge/compare.rs
    crates/judge/src/judge/blame.rs
    crates/judge/src/judge/baseline.rs
    crates/judge/src/judge/checks/mod.rs
    crates/judge/src/judge/checks/errors.rs
    crates/judge/src/judge/checks/sleep.rs
    crates/judge/src/judge/checks/network.rs
    crates/judge/src/judge/checks/system.rs
    crates/judge/src/judge/checks/memory.rs
    crates/judge/src/judge/checks/storage.rs
    crates/judge/src/judge/rules.rs
    crates/wire/src/wire/figures.rs
    crates/wire/src/wire/counters.rs
  )
fi
args=()
for f in "${files[@]}"; do
  args+=(--file "$f")
done
for dir in ${MUTANTS_AGAIN:-}; do
  while IFS= read -r name; do
    # "src/x.rs:LINE:COL: replace ..." -> a regex of the same mutant at any line.
    args+=(--re "$(python3 -c 'import re, sys
path, _, _, change = sys.argv[1].split(":", 3)
print("^" + re.escape(path) + r":\d+:\d+: " + re.escape(change.strip()) + "$")' "$name")")
  done <"$dir/mutants.out/missed.txt"
done

# The library's own tests own the judge's branches; the integration tests run the binary for
# minutes and add little here.
# Unoptimised and without debug information: each mutant rebuilds the whole library, which takes
# about 90 s optimised and 6 s like this; the unit tests still run in seconds.
export RUSTFLAGS="${RUSTFLAGS:--C opt-level=0 -C debuginfo=0}"
cargo mutants --no-shuffle --jobs "${MUTANTS_JOBS:-1}" --timeout 120 \
  --output "${MUTANTS_OUTPUT:-target/mutants}" "${args[@]}" -- --lib
echo "results: ${MUTANTS_OUTPUT:-target/mutants}/mutants.out/{caught,missed,timeout,unviable}.txt" >&2
