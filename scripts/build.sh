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

# The release build LTOs the cdylib alone (scripts/cdylib-lto.sh says why), in a target directory
# of its own: cargo does not know about the wrapper, and would otherwise take a plain `cargo build`'s
# library for fresh (or leave this one for it). `abort-panics`: no std in the wasm, a panic traps
# without formatting a message (Cargo.toml's [features]).
if [ "$profile" = --release ]; then
  export RUSTC_WORKSPACE_WRAPPER="$PWD/scripts/cdylib-lto.sh"
  export CARGO_TARGET_DIR="$PWD/target/pkg"
fi
wasm-pack --log-level warn build "$profile" --target web --out-dir pkg --out-name toolgate . \
  -- --features abort-panics

# The JS glue: wasm-bindgen's output plus the crate's own JS (src/wasm/fast.js, emitted under
# pkg/snippets/) bundled into one ES module. A release build is minified, as a user's bundler would
# (and as the size comparison in BENCHMARKS.md treats the AI SDK); the types stay in toolgate.d.ts.
# Short import and export names (wasm-bindgen's carry incompressible hashes): scripts/shorten-names.mjs.
node scripts/shorten-names.mjs pkg
# Function bodies and data segments in the order gzip compresses best (about 0.8 KiB):
# scripts/reorder-functions.mjs.
[ "$profile" = --release ] && node scripts/reorder-functions.mjs pkg/toolgate_bg.wasm
# Minified, wasm-bindgen's internal properties (`__wbg_ptr` on every exported object, 27 times in
# the glue) get short names too: they are not part of the API (toolgate.d.ts does not declare them).
minify=(--minify '--mangle-props=^(__wbg_ptr|__destroy_into_raw)$')
[ "$profile" = --dev ] && minify=()
esbuild pkg/toolgate.js --bundle --format=esm --platform=browser "${minify[@]}" --log-level=warning \
  --log-override:duplicate-object-key=silent \
  --banner:js='/* @ts-self-types="./toolgate.d.ts" */' --outfile=pkg/toolgate.js --allow-overwrite
rm -rf pkg/snippets
node -e '
  const fs = require("fs");
  const p = JSON.parse(fs.readFileSync("pkg/package.json", "utf8"));
  p.files = p.files.filter((f) => f !== "snippets");
  delete p.sideEffects;
  fs.writeFileSync("pkg/package.json", JSON.stringify(p, null, 2) + "\n");
'
node scripts/size.mjs
