#!/usr/bin/env bash
# npm test: set up what is missing, then run every check and test:
#   format and lints (native and wasm32), native cargo tests, the release build and its size
#   budget, the TypeScript declarations, the reference endpoint's tests, browser tests of the
#   wasm package in headless Chromium, the fault soak, the multi-tab soak, and end-to-end tests of
#   the demo.
# Every step runs even when an earlier one failed; the exit code is non-zero if any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
export CARGO_TERM_COLOR=never

bash scripts/setup.sh tests || { echo "set-up failed" >&2; exit 1; }

passed=0
failed=0
failed_steps=()
step() {
  local name=$1
  shift
  local t0=$SECONDS
  printf '\n=== %s\n' "$name"
  if "$@"; then
    passed=$((passed + 1))
    printf '=== %s: ok (%ss)\n' "$name" $((SECONDS - t0))
  else
    failed=$((failed + 1))
    failed_steps+=("$name")
    printf '=== %s: FAILED (%ss)\n' "$name" $((SECONDS - t0))
  fi
}

step "rustfmt" cargo fmt --all --check
step "clippy (native)" cargo clippy --all-targets -- -D warnings
step "clippy (wasm32)" cargo clippy --target wasm32-unknown-unknown --all-targets -- -D warnings
step "clippy (wasm32, abort-panics)" cargo clippy --target wasm32-unknown-unknown --features abort-panics -- -D warnings
step "clippy (wasm32, Neuron only)" cargo clippy --target wasm32-unknown-unknown --no-default-features --features abort-panics -- -D warnings
step "cargo test (native)" cargo test
step "build pkg/ (release)" bash scripts/build.sh
# The package's budget: wasm + JS glue at most 56,700 B gzip, as scripts/size.mjs measures it (node
# zlib, level 9). Today's figure is 56,569 B, 131 B over the AI SDK's chat client (56,438 B,
# `ai@7.0.185`, measured as BENCHMARKS.md 4 says; the budget was one byte under it until this
# version's correctness fixes). It moves by up to about 200 B between commits with the function
# layout. BENCHMARKS.md has the figures and the further goal (45 KiB). The Neuron-only entry
# point (pkg/neuron/, 41,037 B): at most 41,200 B.
size_budgets() {
  node scripts/size.mjs --max-gzip 56700 && node scripts/size.mjs --dir pkg/neuron --max-gzip 41200
}
step "size budget" size_budgets
step "TypeScript declarations (tsc --strict)" node_modules/.bin/tsc -p tests/ts/tsconfig.json
# Test files are named one by one (the shell expands the pattern): Node 22 and later read a
# directory given to --test as a module to run, and fail.
step "reference endpoint (node --test)" node --test www/server/test/*.test.mjs
step "browser tests (wasm-bindgen-test, headless Chromium)" bash scripts/test-browser.sh
# The fault soak: 200 conversations through ApprovalClient, split across the server variants (Neuron
# strict / incremental / cumulative readings, Sidenet native / AI SDK approval form), against
# endpoints that drop, fail and delay requests and are each killed and restarted once; no decision
# may be lost, duplicated or invented (about 20 s).
step "fault soak (ApprovalClient, faults + restart)" node scripts/soak.mjs
# The multi-tab soak: 24 conversations, each one thread in three tabs sharing localStorage, every
# tab deciding and submitting at random; every decision applied once as intended, no tab left
# behind, no run read as expired (about 20 s).
step "multi-tab soak (three ApprovalClients per thread)" node scripts/soak-tabs.mjs
# Two test files at a time: each starts its own endpoint and Chromium, and most of a file's time
# is spent waiting on the endpoint's paced chunks, not the CPU (about 200 s one at a time, 120 s
# two at a time on 2 cores; every file passed three times in a row that way with a CPU hog on one
# core, and once with one on each). Node before 20.10 has no --test-concurrency: one at a time there.
# Two files of the step run in Node without a browser: the packed package (package.test.mjs) and
# the client against a server built on the AI SDK (ai-sdk.test.mjs, about a second).
if [ -d tests/e2e ]; then
  e2e=(node --test)
  if node --test-concurrency=2 -e '' 2>/dev/null; then e2e+=(--test-concurrency=2); fi
  step "end-to-end: the demo (Playwright, headless Chromium), the package, the AI SDK, pydantic-ai and LangChain servers" "${e2e[@]}" tests/e2e/*.test.mjs
fi

printf '\n'
if [ "$failed" -gt 0 ]; then
  printf 'failed steps: %s\n' "${failed_steps[*]}"
fi
printf 'steps: %d passed, %d failed\n' "$passed" "$failed"
[ "$failed" -eq 0 ]
