#!/usr/bin/env bash
# Builds the npm package into pkg/ (wasm-pack, --target web, release profile, wasm-opt -Oz)
# and prints its size. Pass --dev for a quick unoptimized build.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
bash scripts/setup.sh
# wasm-pack runs the wasm-opt it finds on PATH: binaryen 132 from the npm dev dependencies.
export PATH="$PWD/node_modules/.bin:$PATH"

profile=--release
[ "${1:-}" = "--dev" ] && profile=--dev

wasm-pack --log-level warn build "$profile" --target web --out-dir pkg --out-name toolgate .
node scripts/size.mjs
