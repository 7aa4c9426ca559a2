#!/usr/bin/env bash
# Browser tests: the wasm package's JS surface and the client driver, compiled to wasm32 and run
# by wasm-bindgen-test-runner in headless Chromium, against the reference endpoint, which this
# script starts on a free loopback port with a fresh data directory and stops afterwards. A second
# endpoint with fault injection on (drops, 500s, delays; seeded) serves the client's fault tests, two
# more read Neuron decisions as Neuron's incremental and cumulative revisions do, one keeps Neuron's
# newest, append-only history; the
# Sidenet tests (tests/web_sidenet.rs) also use one with slower stream chunks and one that requires a
# bearer token. The grace window of a paused Sidenet run is short (GRACE_MS, 3 s) so expiry is tested.
# The core's own tests (tests/core.rs, stream.rs, client_neuron.rs, client_sidenet.rs) run here
# too, compiled to wasm32: the same assertions against the module as it ships (SIMD scanner,
# allocator, 32-bit usize).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

tmp=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null
  # TOOLGATE_KEEP_LOGS=dir keeps the endpoints' logs and data (e.g. with QUIET=0 for request lines).
  [ -n "${TOOLGATE_KEEP_LOGS:-}" ] && mkdir -p "$TOOLGATE_KEEP_LOGS" && cp -r "$tmp"/*.log "$tmp"/*-data "$TOOLGATE_KEEP_LOGS"/ 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

# start_endpoint NAME [VAR=value ...]: starts an endpoint, sets $url to its address.
start_endpoint() {
  local name=$1
  shift
  : > "$tmp/$name.log"
  env PORT=0 HOST=127.0.0.1 QUIET=1 DATA_DIR="$tmp/$name-data" "$@" \
    node www/server/main.mjs > "$tmp/$name.log" 2>&1 &
  pids+=($!)
  url=""
  for _ in $(seq 1 100); do
    url=$(sed -n 's/^toolgate endpoint listening on \(http[^ ]*\).*/\1/p' "$tmp/$name.log" | head -n 1)
    [ -n "$url" ] && break
    sleep 0.1
  done
  [ -n "$url" ] || { echo "the $name endpoint did not start:" >&2; cat "$tmp/$name.log" >&2; exit 1; }
  echo "$name endpoint at $url"
}

# The endpoint, with a short grace window so expiry can be tested.
start_endpoint reference GRACE_MS="${GRACE_MS:-3000}" QUIET="${QUIET:-1}"
export TOOLGATE_ENDPOINT="$url"
# The same with faults: ~15% dropped connections, ~10% 500s (before or after applying), delays.
start_endpoint faulty GRACE_MS="${GRACE_MS:-3000}" QUIET="${QUIET:-1}" FAULTS="${FAULTS:-drop:0.15,error:0.1,delay:30,seed:7}"
export TOOLGATE_FAULTY_ENDPOINT="$url"

# Neuron: the decision semantics of Neuron's other revisions (the reference endpoint's default is
# the newest, strict one).
start_endpoint incremental QUIET="${QUIET:-1}" NEURON_DECISIONS=incremental
export TOOLGATE_INCREMENTAL_ENDPOINT="$url"
start_endpoint cumulative QUIET="${QUIET:-1}" NEURON_DECISIONS=cumulative
export TOOLGATE_CUMULATIVE_ENDPOINT="$url"
# Neuron's newest history: a paused tool_call message is never rewritten (its tools stay pending
# for good; the outcome is on the tool_call_result after it), partial decisions are held aside.
start_endpoint append-only QUIET="${QUIET:-1}" NEURON_HISTORY=append-only
export TOOLGATE_APPEND_ONLY_ENDPOINT="$url"
# A Neuron conflict answered as the seed's own controller does: HTTP 200 {"status":"conflict"}.
start_endpoint conflict-200 QUIET="${QUIET:-1}" NEURON_CONFLICT_STATUS=200
export TOOLGATE_CONFLICT_200_ENDPOINT="$url"

# Sidenet: slower chunks (text deltas surely arrive one by one), and one that requires a token.
start_endpoint slow GRACE_MS="${GRACE_MS:-3000}" QUIET="${QUIET:-1}" CHUNK_DELAY_MS=25
export TOOLGATE_SLOW_ENDPOINT="$url"
start_endpoint token GRACE_MS="${GRACE_MS:-3000}" QUIET="${QUIET:-1}" TOKEN=s3cret
export TOOLGATE_TOKEN_ENDPOINT="$url"
export TOOLGATE_GRACE_MS="${GRACE_MS:-3000}"

# A black hole: accepts connections and never answers (timeouts, free() with a request in flight).
: > "$tmp/blackhole.log"
node -e "const s = require('net').createServer(() => {}); s.listen(0, '127.0.0.1', () => console.log('http://127.0.0.1:' + s.address().port));" \
  > "$tmp/blackhole.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 100); do
  url=$(head -n 1 "$tmp/blackhole.log")
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { echo "the black hole did not start" >&2; exit 1; }
export TOOLGATE_BLACKHOLE_ENDPOINT="$url"

# Chromium as root in a closed network: no sandbox, no background traffic.
cat > "$tmp/webdriver.json" <<JSON
{
  "goog:chromeOptions": {
    "binary": "$(command -v chromium)",
    "args": ["--disable-gpu", "--no-first-run", "--disable-quic", "--disable-background-networking",
             "--disable-component-update", "--disable-sync", "--user-data-dir=$tmp/profile"]
  }
}
JSON

export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner
export CHROMEDRIVER=${CHROMEDRIVER:-$(command -v chromedriver)}
export WASM_BINDGEN_TEST_WEBDRIVER_JSON="$tmp/webdriver.json"
export WASM_BINDGEN_TEST_TIMEOUT=${WASM_BINDGEN_TEST_TIMEOUT:-120}
# TOOLGATE_TESTS="--test web_client" runs only the targets given; arguments go to the tests (a name filter).
cargo test --target wasm32-unknown-unknown ${TOOLGATE_TESTS:---test core --test stream --test client_neuron --test client_sidenet \
  --test web --test web_client --test web_sidenet} "$@"
