#!/usr/bin/env bash
# Builds the npm package into pkg/ (cargo, wasm-bindgen --target web, wasm-opt, the post-link steps
# below) and prints its size. Pass --dev for a quick unoptimized build.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
bash scripts/setup.sh
# wasm-opt: binaryen 132 from the npm dev dependencies (Debian's 108 cannot read what wasm-bindgen
# emits); esbuild and terser from there too.
export PATH="$PWD/node_modules/.bin:$PATH"

profile=release
[ "${1:-}" = "--dev" ] && profile=dev

# wasm-opt's passes for the release build, measured after scripts/reorder-functions.mjs:
# flatten + rereloop before -Oz restructures control flow into a form -Oz shrinks further (-0.6 KiB
# gzip), a second round after a first -Oz shrinks it again (-0.1 KiB; a third does not) and one -Oz
# before the first round a little more (-30 B); --monomorphize specializes functions for the
# constant arguments their callers pass, where that shrinks them (-44 B gzip); -aimfs 5 always
# inlines functions of size up to 5 (default 2): more bytes, fewer after gzip (-0.17 KiB; 4 and 6
# do less, 8 costs 0.8 KiB). The producers and target-features sections are not needed at run time;
# the features enabled are the ones rustc's wasm32 target emits.
WASM_OPT=(--low-memory-unused -Oz --flatten --rereloop --monomorphize -Oz --flatten --rereloop -Oz -Oz
  --converge -aimfs 5 --strip-producers --strip-target-features --enable-bulk-memory
  --enable-nontrapping-float-to-int --enable-sign-ext --enable-mutable-globals
  --enable-reference-types --enable-multivalue --enable-simd)

# The release build LTOs the cdylib alone (scripts/cdylib-lto.sh says why), in a target directory
# of its own: cargo does not know about the wrapper, and would otherwise take a plain `cargo build`'s
# library for fresh (or leave this one for it). `abort-panics`: no std in the wasm, a panic traps
# without formatting a message (Cargo.toml's [features]).
target_dir=target
if [ "$profile" = release ]; then
  export RUSTC_WORKSPACE_WRAPPER="$PWD/scripts/cdylib-lto.sh"
  target_dir=target/pkg
fi
export CARGO_TARGET_DIR="$PWD/$target_dir"

# One build of the crate into $1, with the crate features $2: cargo (the library alone, for
# wasm32), wasm-bindgen (the web target's ES module glue and its TypeScript declarations), then
# wasm-opt on a release build; `finish` then does the post-link steps. (The same steps wasm-pack's
# `build --target web` takes, with no tool to install for them but wasm-bindgen's CLI.)
link() {
  local out=$1 features=$2 flags=(--release) dir=release
  [ "$profile" = dev ] && flags=() && dir=debug
  # shellcheck disable=SC2086 # $features is a list of cargo flags
  cargo build --lib --target wasm32-unknown-unknown "${flags[@]}" $features
  rm -rf "$out"
  mkdir -p "$out"
  wasm-bindgen "$CARGO_TARGET_DIR/wasm32-unknown-unknown/$dir/toolgate.wasm" --out-dir "$out" \
    --typescript --target web --out-name toolgate
  if [ "$profile" = release ]; then
    wasm-opt "$out/toolgate_bg.wasm" -o "$out/toolgate_bg.wasm-opt.wasm" "${WASM_OPT[@]}"
    mv "$out/toolgate_bg.wasm-opt.wasm" "$out/toolgate_bg.wasm"
  fi
}

# The post-link steps for the build in $1, with $2 moves of the reordering's search (below). They
# touch nothing but $1 (and the reorder cache, written by rename), so the two builds' post-link
# steps can run side by side.
finish() {
  local out=$1 moves=$2
  # The JS glue: wasm-bindgen's output plus the crate's own JS (src/wasm/fast.js, emitted under
  # snippets/) bundled into one ES module. A release build is minified, as a user's bundler would
  # (and as the size comparison in BENCHMARKS.md treats the AI SDK); the types stay in toolgate.d.ts.
  # Short import and export names (wasm-bindgen's carry incompressible hashes): scripts/shorten-names.mjs.
  node scripts/shorten-names.mjs "$out"
  # A method called on a freed object (or from inside its `free()`): wasm-bindgen's checks throw a
  # plain Error ("null pointer passed to rust"); the package throws a ToolgateError `invalid_state`,
  # as for every other misuse, and its async methods return it rejected. (Browser tests run
  # wasm-bindgen-test's own glue: tests/e2e/freed.)
  node scripts/patch-glue.mjs "$out/toolgate.js"
  # Function bodies and data segments in the order gzip compresses best (about 1.4 KiB):
  # scripts/reorder-functions.mjs. It is deterministic and takes one to four minutes (its measures
  # run in worker threads, with the same result whatever their number), so its result is kept in
  # target/reorder-cache/ under a hash of its input, of the script and of the number of moves, and
  # reused.
  if [ "$profile" = release ]; then
    local key cached
    key=$( (cat "$out/toolgate_bg.wasm" scripts/reorder-functions.mjs; echo "$moves") | sha256sum | cut -c1-40)
    cached="target/reorder-cache/$key.wasm"
    if [ -f "$cached" ]; then
      cp "$cached" "$out/toolgate_bg.wasm"
      echo "reordered $out/toolgate_bg.wasm (the same input as an earlier build: $cached)"
    else
      REORDER_MOVES=$moves node scripts/reorder-functions.mjs "$out/toolgate_bg.wasm"
      mkdir -p target/reorder-cache
      cp "$out/toolgate_bg.wasm" "$cached.tmp" && mv "$cached.tmp" "$cached"
    fi
  fi
  # Minified, wasm-bindgen's internal properties (`__wbg_ptr` on every exported object, 27 times in
  # the glue, `_wbg_cb_unref` on the closures it gives the crate's JS and `cnt` on their state) get
  # short names too: they are not part of the API (toolgate.d.ts does not declare them).
  local minify=(--minify '--mangle-props=^(__wbg_ptr|_wbg_cb_unref|cnt)$')
  [ "$profile" = dev ] && minify=()
  esbuild "$out/toolgate.js" --bundle --format=esm --platform=browser "${minify[@]}" --log-level=warning \
    --log-override:duplicate-object-key=silent \
    --banner:js='/* @ts-self-types="./toolgate.d.ts" */' --outfile="$out/toolgate.js" --allow-overwrite
  # Then terser over esbuild's output (two compress passes, safe options only): it finds what one
  # pass leaves (-180 B gzip of the glue, measured); the types comment is kept. `hoist_funs` moves
  # the function declarations (hoisted by the language anyway) before the other statements, where
  # gzip finds more repeats among them (-42 B).
  if [ "$profile" = release ]; then
    terser "$out/toolgate.js" --module --ecma 2020 --compress passes=2,hoist_funs=true --mangle \
      --comments '/@ts-self-types/' --output "$out/toolgate.js"
  fi
  # wasm-bindgen's declarations of the raw module name its exports before they were shortened:
  # not shipped (not in `files`), and not left beside the package to mislead.
  rm -rf "$out/snippets" "$out/toolgate_bg.wasm.d.ts"
}

# The package: both dialects (`toolgate`), and `toolgate/neuron`: the same API built without the
# Sidenet dialect (the `sidenet` feature), for apps that talk to Neuron servers only: about 14 KiB
# gzip smaller. The reordering takes minutes on a fresh machine: the first build's runs in the
# background while the second is compiled, optimized and reordered.
# The main module's search makes 60,000 moves, the Neuron-only one's 20,000 (the script's default):
# on this version's modules 20,000 / 40,000 / 60,000 moves left the package at 56,485 / 56,420 /
# 56,367 B gzip (wasm + glue) and `toolgate/neuron` at 41,067 / 40,995 / 40,962 B; the main module's
# search runs while the Neuron build is compiled and searched: the build took 5 min 3 s so on the
# 2-core VM (5 min 52 s with 60,000 moves for both, 4 min 22 s with 40,000 for both).
link pkg "--features abort-panics"
finish pkg 60000 > target/finish-pkg.log 2>&1 &
first=$!
# Should the second build fail, the first's steps stop with it.
trap 'kill "$first" 2>/dev/null || true' EXIT
rm -rf pkg/neuron target/pkg-neuron
link target/pkg-neuron "--no-default-features --features abort-panics"
finish target/pkg-neuron 20000
wait "$first" || { cat target/finish-pkg.log >&2; echo "build: the post-link steps of pkg/ failed" >&2; exit 1; }
trap - EXIT
cat target/finish-pkg.log
mkdir -p pkg/neuron
# Its module has a name of its own: a bundler (or a hand) that copies one `toolgate_bg.wasm` beside
# an app's bundle never gives one entry point the other's module without a word (a 404 instead).
cp target/pkg-neuron/toolgate.js target/pkg-neuron/toolgate.d.ts pkg/neuron/
cp target/pkg-neuron/toolgate_bg.wasm pkg/neuron/toolgate_neuron_bg.wasm
node -e '
  const fs = require("fs"), file = "pkg/neuron/toolgate.js";
  const glue = fs.readFileSync(file, "utf8");
  if (!/new URL\(\s*["\x27`]toolgate_bg\.wasm["\x27`]\s*,\s*import\.meta\.url\s*\)/.test(glue)) throw new Error("no module URL in " + file);
  fs.writeFileSync(file, glue.replaceAll("toolgate_bg.wasm", "toolgate_neuron_bg.wasm"));
'
# Its declarations say what it speaks: `dialect` is `"neuron"` alone (`"sidenet"` throws there).
node -e '
  const fs = require("fs"), file = "pkg/neuron/toolgate.d.ts";
  const both = "dialect?: \"neuron\" | \"sidenet\";", snap = "readonly dialect: \"neuron\" | \"sidenet\";";
  const dts = fs.readFileSync(file, "utf8");
  if (dts.split(both).length !== 2 || dts.split(snap).length !== 2) throw new Error("no dialect types to narrow in " + file);
  fs.writeFileSync(file, dts.replace(both, "dialect?: \"neuron\";").replace(snap, "readonly dialect: \"neuron\";")
    .replace("/** The server\x27s protocol. Default `\"neuron\"`. */", "/** The server\x27s protocol: `\"neuron\"` alone in `toolgate/neuron`. */"));
'
# The package's manifest, from Cargo.toml's [package] (name, description, version, license), its
# read-me and licenses, and a .gitignore that keeps the built package out of git.
cp README.md LICENSE-MIT LICENSE-APACHE pkg/
printf '*\n' > pkg/.gitignore
cargo metadata --no-deps --format-version 1 --offline > target/metadata.json
node -e '
  const fs = require("fs");
  const crate = JSON.parse(fs.readFileSync("target/metadata.json", "utf8")).packages.find((p) => p.name === "toolgate");
  const p = {
    name: crate.name,
    type: "module",
    description: crate.description,
    version: crate.version,
    license: crate.license,
    files: ["toolgate_bg.wasm", "toolgate.js", "toolgate.d.ts", "neuron/", "LICENSE-MIT", "LICENSE-APACHE"],
    main: "toolgate.js",
    types: "toolgate.d.ts",
    // Two entry points: `toolgate` (both dialects) and `toolgate/neuron` (Neuron only); the wasm
    // files stay importable for bundlers that take the module URL from the app.
    exports: {
      ".": { types: "./toolgate.d.ts", default: "./toolgate.js" },
      "./neuron": { types: "./neuron/toolgate.d.ts", default: "./neuron/toolgate.js" },
      "./toolgate_bg.wasm": "./toolgate_bg.wasm",
      "./neuron/toolgate_neuron_bg.wasm": "./neuron/toolgate_neuron_bg.wasm",
      "./package.json": "./package.json",
    },
    // TypeScript resolving as Node 10 did (`moduleResolution: "node"`, no `exports`) finds the
    // subpath`s types too.
    typesVersions: { "*": { neuron: ["neuron/toolgate.d.ts"] } },
  };
  fs.writeFileSync("pkg/package.json", JSON.stringify(p, null, 2) + "\n");
'
node scripts/size.mjs
node scripts/size.mjs --dir pkg/neuron
