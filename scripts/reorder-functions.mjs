// Reorders the function bodies of a wasm module so that gzip compresses it better, in place:
//   node scripts/reorder-functions.mjs pkg/toolgate_bg.wasm
//
// Deflate finds repeats only within the last 32 KiB, and the code section is about 100 KiB, so
// which bodies sit near each other decides how many of their common instruction sequences it can
// reuse. The order is built greedily: after the bodies placed so far, the next one is the body
// that costs least to compress, per byte of what it would cost alone, with the last 32 KiB placed
// as deflate's dictionary. Binaryen (the npm package the build already uses for wasm-opt) moves the
// functions, renumbering every call and table entry; its command-line wasm-opt then writes the
// module with the same -Oz options as the build (the writer's stack-IR pass, which binaryen.js does
// not run, saves about 200 bytes). Behaviour is unchanged: only the order of function bodies in
// the code section moves. Deterministic: ties keep the earlier body.
import fs from 'node:fs';
import { execFileSync } from 'node:child_process';
import { deflateRawSync, gzipSync } from 'node:zlib';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import binaryen from 'binaryen';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const file = process.argv[2];
if (!file) throw new Error('usage: reorder-functions.mjs <module.wasm>');
const WINDOW = 32768;
const FEATURES = [
  '--enable-bulk-memory',
  '--enable-nontrapping-float-to-int',
  '--enable-sign-ext',
  '--enable-mutable-globals',
  '--enable-reference-types',
  '--enable-multivalue',
  '--enable-simd',
];

const input = fs.readFileSync(file);

/** The bodies of the code section, in order (defined functions only). */
function bodies(bytes) {
  let p = 8;
  const leb = () => {
    let r = 0;
    let s = 0;
    let x;
    do {
      x = bytes[p++];
      r += (x & 0x7f) * 2 ** s;
      s += 7;
    } while (x & 0x80);
    return r;
  };
  const out = [];
  while (p < bytes.length) {
    const id = bytes[p++];
    const size = leb();
    const end = p + size;
    if (id === 10) {
      for (let n = leb(); n > 0; n--) {
        const len = leb();
        out.push(bytes.subarray(p, p + len));
        p += len;
      }
    }
    p = end;
  }
  return out;
}

const code = bodies(input);
const deflate = (b, dictionary) =>
  deflateRawSync(b, dictionary ? { level: 9, dictionary } : { level: 9 }).length;
const alone = code.map((b) => deflate(b));

// Greedy: start where the module starts; then the cheapest body next, relative to its own cost.
const n = code.length;
const order = [0];
const placed = new Uint8Array(n);
placed[0] = 1;
let tail = Buffer.from(code[0]);
for (let k = 1; k < n; k++) {
  const dictionary = tail.length > WINDOW ? tail.subarray(tail.length - WINDOW) : tail;
  let best = -1;
  let bestCost = Infinity;
  for (let i = 0; i < n; i++) {
    if (placed[i]) continue;
    const cost = deflate(code[i], dictionary) / alone[i];
    if (cost < bestCost) {
      bestCost = cost;
      best = i;
    }
  }
  placed[best] = 1;
  order.push(best);
  tail = Buffer.concat([dictionary, code[best]]);
}

const F = binaryen.Features;
const module = binaryen.readBinary(input);
module.setFeatures(
  F.BulkMemory | F.BulkMemoryOpt | F.NontrappingFPToInt | F.SignExt | F.MutableGlobals | F.ReferenceTypes |
    F.Multivalue | F.SIMD128,
);
const defined = [];
for (let i = 0; i < module.getNumFunctions(); i++) {
  const info = binaryen.getFunctionInfo(module.getFunctionByIndex(i));
  if (!info.module) defined.push(info);
}
if (defined.length !== n) throw new Error(`${defined.length} functions, ${n} bodies`);
// Removing a function and adding it again appends it: re-adding all in `order` sets the order.
for (const i of order) {
  const f = defined[i];
  module.removeFunction(f.name);
  module.addFunction(f.name, f.params, f.results, f.vars, f.body);
}
if (!module.validate()) throw new Error('the reordered module does not validate');
const moved = `${file}.reordered`;
fs.writeFileSync(moved, module.emitBinary());
module.dispose();
const wasmOpt = path.join(root, 'node_modules', '.bin', 'wasm-opt');
execFileSync(wasmOpt, [...FEATURES, '--low-memory-unused', '-Oz', moved, '-o', moved]);

// Kept only when it pays (it always has; a check, not a hope).
const gz = (b) => gzipSync(b, { level: 9 }).length;
const before = gz(input);
const after = gz(fs.readFileSync(moved));
if (after < before) {
  fs.renameSync(moved, file);
  console.log(`reordered ${n} functions: wasm gzip ${before} -> ${after} B`);
} else {
  fs.rmSync(moved);
  console.log(`reordering ${n} functions did not pay (${before} -> ${after} B): kept the order`);
}
