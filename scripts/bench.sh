#!/usr/bin/env bash
# The benchmarks: builds pkg/ (release), then runs bench/run.mjs, which serves the bench page with
# the reference endpoint, runs every case in headless Chromium and prints one table (see
# BENCHMARKS.md). Arguments go to bench/run.mjs: --quick, --update (rewrite BENCHMARKS.md's
# results), --json FILE, --only pending,parse,stream,size,turns,memory.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh >&2 # stdout is for the table alone
exec node bench/run.mjs "$@"
