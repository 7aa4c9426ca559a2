#!/usr/bin/env bash
# Browser tests: the wasm package's JS surface and the client driver, compiled to wasm32 and run
# by wasm-bindgen-test-runner in headless Chromium, against the reference endpoint, which this
# script starts on a free loopback port with a fresh data directory and stops afterwards.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"

tmp=$(mktemp -d)
server_pid=""
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

# The endpoint, with a short grace window so expiry can be tested.
PORT=0 HOST=127.0.0.1 QUIET=1 DATA_DIR="$tmp/data" GRACE_MS=${GRACE_MS:-3000} \
  node www/server/main.mjs > "$tmp/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 100); do
  url=$(sed -n 's/^toolgate endpoint listening on \(http[^ ]*\).*/\1/p' "$tmp/server.log" | head -n 1)
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "${url:-}" ] || { echo "the reference endpoint did not start:" >&2; cat "$tmp/server.log" >&2; exit 1; }
echo "reference endpoint at $url"

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

export TOOLGATE_ENDPOINT="$url"
export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER=wasm-bindgen-test-runner
export CHROMEDRIVER=${CHROMEDRIVER:-$(command -v chromedriver)}
export WASM_BINDGEN_TEST_WEBDRIVER_JSON="$tmp/webdriver.json"
export WASM_BINDGEN_TEST_TIMEOUT=${WASM_BINDGEN_TEST_TIMEOUT:-120}
cargo test --target wasm32-unknown-unknown --test web "$@"
