#!/usr/bin/env bash
# npm run fuzz: runs each cargo-fuzz target (fuzz/fuzz_targets/) for FUZZ_SECONDS (default 60), one
# after another, and prints per target: executions, time, exec/s, corpus size and crashes.
#   FUZZ_SECONDS=600 bash scripts/fuzz.sh            # every target, 10 minutes each
#   bash scripts/fuzz.sh stream decisions            # only these targets
# Needs the nightly toolchain and cargo-fuzz (installed here when missing). The corpus grows in
# fuzz/corpus/<target>/ (not committed), seeded from fuzz/seeds/<target>/ (committed); a crash
# stops its target and leaves its input in fuzz/artifacts/<target>/. Exit code 1 if any crashed.
set -uo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
export CARGO_TERM_COLOR=never

SECONDS_EACH=${FUZZ_SECONDS:-60}
JOBS_RSS=${FUZZ_RSS_MB:-2048}

if ! rustup toolchain list | grep -q '^nightly'; then
  echo "[fuzz] installing the nightly toolchain" >&2
  rustup toolchain install nightly --profile minimal || exit 1
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "[fuzz] installing cargo-fuzz" >&2
  cargo install cargo-fuzz || exit 1
fi

if [ $# -gt 0 ]; then
  targets=("$@")
else
  targets=(thread_parse pending decisions stream client)
fi

echo "[fuzz] building ${targets[*]}" >&2
(cd fuzz && cargo +nightly fuzz build -O) || exit 1

logdir=fuzz/logs
mkdir -p "$logdir"
summary=()
crashed=0
for t in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$t" "fuzz/seeds/$t" "fuzz/artifacts/$t"
  before=$(find "fuzz/artifacts/$t" -type f | wc -l)
  log="$logdir/$t.log"
  echo "[fuzz] $t for ${SECONDS_EACH}s (log: $log)" >&2
  # The structured targets (decisions, client) read a sequence of steps: let inputs be long at once.
  case "$t" in
    client | decisions) extra=(-max_len=8192 -len_control=0) ;;
    *) extra=(-max_len=16384) ;;
  esac
  t0=$SECONDS
  (cd fuzz && cargo +nightly fuzz run -O "$t" "corpus/$t" "seeds/$t" -- \
    -max_total_time="$SECONDS_EACH" -print_final_stats=1 -rss_limit_mb="$JOBS_RSS" \
    -timeout=10 "${extra[@]}") >"$log" 2>&1
  rc=$?
  took=$((SECONDS - t0))
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$')
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | tail -1 | grep -o '[0-9]*$')
  corpus=$(find "fuzz/corpus/$t" -type f | wc -l)
  after=$(find "fuzz/artifacts/$t" -type f | wc -l)
  crashes=$((after - before))
  if [ "$rc" -ne 0 ] && [ "$crashes" -eq 0 ]; then
    crashes="? (exit $rc, see $log)"
    crashed=1
  elif [ "$crashes" -gt 0 ]; then
    crashed=1
  fi
  line=$(printf '%-13s executions %-11s time %5ss  exec/s %-7s corpus %-6s crashes %s' \
    "$t" "${execs:-?}" "$took" "${rate:-?}" "$corpus" "$crashes")
  echo "$line"
  summary+=("$line")
done

printf '\n[fuzz] summary (%ss per target)\n' "$SECONDS_EACH"
printf '%s\n' "${summary[@]}"
exit "$crashed"
