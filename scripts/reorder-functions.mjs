// Reorders the function bodies of a wasm module so that gzip compresses it better, in place:
//   node scripts/reorder-functions.mjs pkg/toolgate_bg.wasm
//
// Deflate finds repeats only within the last 32 KiB, and the code section is about 100 KiB, so
// which bodies sit near each other decides how many of their common instruction sequences it can
// reuse. The order is built in two steps. A greedy one: after the bodies placed so far, the next
// one is the body that costs least to compress, per byte of what it would cost alone, with the
// last 32 KiB placed as deflate's dictionary. Then wasm-opt -Oz once more (the new indices change a
// few of its choices), and a local search: swaps of two bodies and moves of a short run of them,
// each kept when the whole module, written in that order, deflates smaller. The search measures
// the very bytes it will write: a body's position is its function index, so a move also changes
// the bytes of the calls to it.
//
// The module is rewritten here, byte for byte: the function and code sections in the new order,
// every function index renumbered (calls, `ref.func`, the element segments, the exports, the start
// function). Nothing else changes; the bodies keep the bytes wasm-opt wrote (its stack-IR pass,
// which a binaryen.js round trip would lose, included). Behaviour is unchanged: only the order of
// the functions moves. Deterministic: a fixed seed and number of moves; ties keep the earlier order.
// 20,000 moves by default (6,000 left about 120 B more, 40,000 about 90 B less at twice the time:
// measured on the same module); scripts/build.sh gives the package's main module 60,000. The moves are measured in worker threads, a few side by side, with the same
// result as one after another: on the 2-core VM the whole script took 1 min 25 s with two workers,
// 2 min 25 s in one thread (REORDER_WORKERS=1). REORDER_MOVES=0 skips the search (the greedy order
// alone, about 15 s); REORDER_SEED sets its seed.
import fs from 'node:fs';
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads';
import { deflateRawSync } from 'node:zlib';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const file = isMainThread ? process.argv[2] : workerData.file;
if (!file) throw new Error('usage: reorder-functions.mjs <module.wasm>');
const WINDOW = 32768;
const MOVES = Number(process.env.REORDER_MOVES ?? 20000);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const wasmOpt = path.join(root, 'node_modules', '.bin', 'wasm-opt');
const FEATURES = [
  '--enable-bulk-memory',
  '--enable-nontrapping-float-to-int',
  '--enable-sign-ext',
  '--enable-mutable-globals',
  '--enable-reference-types',
  '--enable-multivalue',
  '--enable-simd',
];


// --- reading
let bytes;
let p = 0;
let dataIndexed = false; // whether the code names data segments (memory.init, data.drop)
const u32 = () => {
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
const s32 = () => {
  let r = 0;
  let s = 0;
  let x;
  do {
    x = bytes[p++];
    r |= (x & 0x7f) << s;
    s += 7;
  } while (x & 0x80);
  return s < 32 && x & 0x40 ? r | (-1 << s) : r;
};
const skipLeb = () => {
  while (bytes[p++] & 0x80);
};
const leb = (n) => {
  const out = [];
  do {
    let b = n & 0x7f;
    n = Math.floor(n / 128);
    if (n) b |= 0x80;
    out.push(b);
  } while (n);
  return out;
};

/** Walks one expression from p to its final `end`, calling `func(at)` before each function index. */
function expr(func) {
  let depth = 1;
  while (depth > 0) {
    const op = bytes[p++];
    if (op >= 0x02 && op <= 0x04) {
      // block, loop, if: a block type (empty, a value type, or a type index as s33)
      depth++;
      if (bytes[p] === 0x40 || (bytes[p] >= 0x6f && bytes[p] <= 0x7f)) p++;
      else skipLeb();
    } else if (op === 0x0b) depth--;
    else if (op === 0x0c || op === 0x0d) skipLeb();
    else if (op === 0x0e) {
      for (let n = u32() + 1; n > 0; n--) skipLeb();
    } else if (op === 0x10 || op === 0x12 || op === 0xd2) {
      func(p);
      skipLeb();
    } else if (op === 0x11 || op === 0x13) {
      skipLeb();
      skipLeb();
    } else if (op === 0x1c) {
      for (let n = u32(); n > 0; n--) p++;
    } else if (op >= 0x20 && op <= 0x26) skipLeb();
    else if (op >= 0x28 && op <= 0x3e) {
      skipLeb();
      skipLeb();
    } else if (op === 0x3f || op === 0x40) p++;
    else if (op === 0x41 || op === 0x42) skipLeb();
    else if (op === 0x43) p += 4;
    else if (op === 0x44) p += 8;
    else if (op === 0xd0) p++;
    else if (op === 0xfc) {
      const sub = u32();
      if (sub === 8 || sub === 9) dataIndexed = true;
      if (sub === 8 || sub === 12 || sub === 14) {
        skipLeb();
        skipLeb();
      } else if (sub === 10) p += 2;
      else if (sub === 11) p += 1;
      else if (sub === 9 || sub === 13 || (sub >= 15 && sub <= 17)) skipLeb();
      else if (sub > 7) throw new Error(`unknown instruction 0xfc ${sub}`);
    } else if (op === 0xfd) {
      const sub = u32();
      if (sub <= 11 || sub === 92 || sub === 93) {
        skipLeb();
        skipLeb();
      } else if (sub === 12 || sub === 13) p += 16;
      else if (sub >= 21 && sub <= 34) p++;
      else if (sub >= 84 && sub <= 91) {
        skipLeb();
        skipLeb();
        p++;
      }
    } else if (
      !(op <= 0x01 || op === 0x05 || op === 0x0f || op === 0x1a || op === 0x1b || (op >= 0x45 && op <= 0xc4) || op === 0xd1)
    ) {
      throw new Error(`unknown instruction 0x${op.toString(16)} at ${p - 1}`);
    }
  }
}

/**
 * A run of bytes with function indices in it, as pieces: literal bytes between the indices, and
 * the old indices. `walk(mark)` advances p over the run, calling mark(at) before each index.
 */
function pieces(from, walk) {
  const lits = [];
  const funcs = [];
  let last = from;
  walk((at) => {
    lits.push(bytes.subarray(last, at));
    const save = p;
    p = at;
    funcs.push(u32());
    last = p;
    p = save;
  });
  lits.push(bytes.subarray(last, p));
  return { lits, funcs };
}

/** The parts of a module that a new order of its functions changes; `write(order)` writes it so. */
function parse(buf) {
  bytes = buf;
  dataIndexed = false;
  if (bytes.readUInt32LE(0) !== 0x6d736100) throw new Error(`${file} is not a wasm module`);
  p = 8;
  const sections = [];
  while (p < bytes.length) {
    const head = p;
    const id = bytes[p++];
    const size = u32();
    sections.push({ id, head, start: p, end: p + size });
    p += size;
  }
  const section = (id) => sections.find((s) => s.id === id);
  // A name or debug section would need its function indices renumbered too: the build has none.
  if (section(0)) throw new Error(`${file} has custom sections: strip them first`);

  let imported = 0;
  if (section(2)) {
    p = section(2).start;
    for (let n = u32(); n > 0; n--) {
      for (let k = 0; k < 2; k++) {
        const len = u32();
        p += len;
      }
      const kind = bytes[p++];
      if (kind === 0) {
        imported++;
        skipLeb();
      } else if (kind === 1) {
        p++;
        const flags = bytes[p++];
        skipLeb();
        if (flags & 1) skipLeb();
      } else if (kind === 2) {
        const flags = bytes[p++];
        skipLeb();
        if (flags & 1) skipLeb();
      } else if (kind === 3) p += 2;
      else throw new Error(`unknown import kind ${kind}`);
    }
  }

  // Function section: the type of each defined function.
  p = section(3).start;
  const types = [];
  for (let n = u32(); n > 0; n--) {
    const at = p;
    skipLeb();
    types.push(bytes.subarray(at, p));
  }

  // Code section: each body as pieces (locals and instructions, split at function indices).
  const code = section(10);
  p = code.start;
  const bodyCount = u32();
  if (bodyCount !== types.length) throw new Error(`${types.length} functions, ${bodyCount} bodies`);
  const raw = [];
  const body = [];
  for (let i = 0; i < bodyCount; i++) {
    const size = u32();
    const end = p + size;
    const from = p;
    for (let n = u32(); n > 0; n--) {
      skipLeb();
      p++;
    }
    body.push(pieces(from, (mark) => expr(mark)));
    if (p !== end) throw new Error(`body ${i} not read to its end`);
    raw.push(bytes.subarray(from, end));
  }

  // Other sections that name functions: exports, start, elements.
  const rewritten = new Map();
  if (section(7)) {
    const s = section(7);
    p = s.start;
    rewritten.set(
      7,
      pieces(s.start, (mark) => {
        for (let n = u32(); n > 0; n--) {
          const len = u32();
          p += len;
          const kind = bytes[p++];
          if (kind === 0) mark(p);
          skipLeb();
        }
      }),
    );
  }
  if (section(8)) {
    p = section(8).start;
    rewritten.set(8, pieces(p, (mark) => (mark(p), skipLeb())));
  }
  if (section(9)) {
    const s = section(9);
    p = s.start;
    rewritten.set(
      9,
      pieces(s.start, (mark) => {
        for (let n = u32(); n > 0; n--) {
          const flags = u32();
          if (flags & 2 && !(flags & 1)) skipLeb(); // table index
          if (!(flags & 1)) expr(mark); // offset
          if (flags & 3) p++; // element kind or reference type
          for (let k = u32(); k > 0; k--) {
            if (flags & 4) expr(mark);
            else {
              mark(p);
              skipLeb();
            }
          }
        }
      }),
    );
  }
  for (const [id, { lits }] of rewritten) {
    if (lits.at(-1).byteOffset + lits.at(-1).length !== bytes.byteOffset + section(id).end) {
      throw new Error(`section ${id} not read to its end`);
    }
  }

  // Data segments: their order is free when all are active, at constant offsets that do not
  // overlap, and no instruction names one by its index.
  const segments = [];
  let dataFree = false;
  if (section(11)) {
    p = section(11).start;
    const ranges = [];
    for (let n = u32(); n > 0; n--) {
      const at = p;
      const flags = u32();
      if (flags === 2) skipLeb(); // memory index
      let offset = NaN;
      if (flags !== 1) {
        // an active segment: its offset, when a constant (`i32.const c; end`)
        const from = p;
        expr(() => {});
        const end = p;
        p = from + 1;
        if (bytes[from] === 0x41) {
          const c = s32();
          if (p === end - 1) offset = c >>> 0;
        }
        p = end;
      }
      const len = u32();
      p += len;
      ranges.push([offset, offset + len]);
      segments.push(bytes.subarray(at, p));
    }
    if (p !== section(11).end) throw new Error('data section not read to its end');
    ranges.sort((a, b) => a[0] - b[0]);
    dataFree = !dataIndexed && ranges.every(([a], i) => Number.isFinite(a) && (i === 0 || ranges[i - 1][1] <= a));
  }

  // --- writing, for an order (order[k] = the old position of the body that goes k-th)
  const indices = Array.from({ length: imported + types.length }, (_, i) => Buffer.from(leb(i)));
  function emit(parts, newIndex, out) {
    const { lits, funcs } = parts;
    for (let k = 0; k < funcs.length; k++) {
      out.push(lits[k]);
      const old = funcs[k];
      out.push(indices[old < imported ? old : imported + newIndex[old - imported]]);
    }
    out.push(lits[funcs.length]);
  }
  const bytesOf = (list) => list.reduce((sum, b) => sum + b.length, 0);
  function write(order, data = segments.map((_, i) => i)) {
    const newIndex = new Int32Array(order.length);
    order.forEach((old, k) => (newIndex[old] = k));
    const out = [bytes.subarray(0, 8)];
    const put = (id, list) => {
      out.push(Buffer.from([id, ...leb(bytesOf(list))]));
      for (const b of list) out.push(b);
    };
    for (const s of sections) {
      if (s.id === 3) {
        put(3, [Buffer.from(leb(order.length)), ...order.map((i) => types[i])]);
      } else if (s.id === 10) {
        const list = [Buffer.from(leb(order.length))];
        for (const i of order) {
          const b = [];
          emit(body[i], newIndex, b);
          list.push(Buffer.from(leb(bytesOf(b))), ...b);
        }
        put(10, list);
      } else if (s.id === 11) {
        put(11, [Buffer.from(leb(data.length)), ...data.map((i) => segments[i])]);
      } else if (rewritten.has(s.id)) {
        const b = [];
        emit(rewritten.get(s.id), newIndex, b);
        put(s.id, b);
      } else {
        out.push(bytes.subarray(s.head, s.end));
      }
    }
    return Buffer.concat(out);
  }
  // The writer, asked for the same order, must give back the same bytes.
  if (!write(raw.map((_, i) => i)).equals(buf)) throw new Error(`${file}: not read as written`);
  return { raw, write, segments: segments.length, dataFree };
}

const size = (b) => deflateRawSync(b, { level: 9 }).length;
const identity = (n) => Array.from({ length: n }, (_, i) => i);

// A worker of the local search: given an order of the functions and of the data segments, the
// size the module written so deflates to.
if (!isMainThread) {
  const { module } = workerData;
  const { write } = parse(Buffer.from(module.buffer, module.byteOffset, module.length));
  parentPort.on('message', ({ order, data }) => parentPort.postMessage(size(write(order, data))));
} else {
  await main();
}

async function main() {
  const input = fs.readFileSync(file);

  // --- greedy: start where the module starts; then the cheapest body next, relative to its own cost.
  const first = parse(input);
  const raw = first.raw;
  const n = raw.length;
  const alone = raw.map((b) => size(b));
  const order = [0];
  const placed = new Uint8Array(n);
  placed[0] = 1;
  let tail = Buffer.from(raw[0]);
  const deflateWith = (b, dictionary) => deflateRawSync(b, { level: 9, dictionary }).length;
  for (let k = 1; k < n; k++) {
    const dictionary = tail.length > WINDOW ? tail.subarray(tail.length - WINDOW) : tail;
    let best = -1;
    let bestCost = Infinity;
    for (let i = 0; i < n; i++) {
      if (placed[i]) continue;
      const cost = deflateWith(raw[i], dictionary) / alone[i];
      if (cost < bestCost) {
        bestCost = cost;
        best = i;
      }
    }
    placed[best] = 1;
    order.push(best);
    tail = Buffer.concat([dictionary, raw[best]]);
  }

  // wasm-opt -Oz once more, as the build ran it: the new function indices change a few of its
  // choices (about 10 bytes). It keeps the order of the functions.
  const moved = `${file}.reordered`;
  fs.writeFileSync(moved, first.write(order));
  execFileSync(wasmOpt, [...FEATURES, '--low-memory-unused', '-Oz', moved, '-o', moved]);
  const optimized = fs.readFileSync(moved);
  const second = parse(optimized);
  fs.rmSync(moved);
  if (second.raw.length !== n) throw new Error(`wasm-opt changed the number of functions (${n} -> ${second.raw.length})`);

  // --- local search: swap two bodies (3 moves in 4) or move a run of 1 to 4 bodies elsewhere; keep
  // the change when the whole module deflates smaller.
  let seed = Number(process.env.REORDER_SEED ?? 0x9e3779b9);
  const random = (m) => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) % m;
  };
  let current = identity(n);
  let best = size(second.write(current));
  const greedy = best;

  // The data segments (after the code) in the order that deflates smallest, when it is free: all
  // orders of up to 5 segments, in lexicographic order (ties keep the earlier one).
  const permutations = (k) =>
    k === 0 ? [[]] : permutations(k - 1).flatMap((q) => Array.from({ length: k }, (_, i) => [...q.slice(0, i), k - 1, ...q.slice(i)]));
  let data = identity(second.segments);
  if (second.dataFree && second.segments <= 5) {
    for (const q of permutations(second.segments).sort((x, y) => x.join() < y.join() ? -1 : 1)) {
      const cost = size(second.write(current, q));
      if (cost < best) {
        best = cost;
        data = q;
      }
    }
  }

  // The moves, drawn in advance: which ones the generator gives does not depend on the order they
  // are applied to.
  const moves = [];
  for (let m = 0; m < MOVES; m++) {
    if (random(4) < 3) {
      const a = random(n);
      const b = random(n);
      if (a !== b) moves.push([0, a, b]);
    } else {
      const len = 1 + random(4);
      const from = random(n - len + 1);
      const to = random(n - len + 1);
      if (to !== from) moves.push([1, len, from, to]);
    }
  }
  const apply = (order, [kind, x, y, z]) => {
    if (kind === 0) {
      const next = order.slice();
      [next[x], next[y]] = [next[y], next[x]];
      return next;
    }
    const rest = order.slice(0, y).concat(order.slice(y + x));
    return rest.slice(0, z).concat(order.slice(y, y + x), rest.slice(z));
  };

  // Each move is measured against the order the moves before it left, as one after another; on
  // more than one core, the next few are measured side by side in workers against the same order,
  // and when one of them is kept, the ones after it are measured again against the new order. So
  // the result is the same whatever the number of workers (REORDER_WORKERS, default one per core up
  // to 4; 1 measures in this thread); only the time changes.
  const count = Math.max(1, Math.min(Number(process.env.REORDER_WORKERS ?? Math.min(os.availableParallelism(), 4)), 16));
  const measurers = [];
  const workers = [];
  if (count === 1) {
    measurers.push((order) => size(second.write(order, data)));
  } else {
    for (let k = 0; k < count; k++) {
      const worker = new Worker(fileURLToPath(import.meta.url), { workerData: { file, module: optimized } });
      let waiting = null;
      worker.on('message', (cost) => waiting.resolve(cost));
      worker.on('error', (error) => waiting?.reject(error));
      worker.on('exit', (code) => waiting?.reject(new Error(`a reorder worker exited (${code})`)));
      workers.push(worker);
      measurers.push(
        (order) =>
          new Promise((resolve, reject) => {
            waiting = { resolve, reject };
            worker.postMessage({ order, data });
          }),
      );
    }
  }
  try {
    for (let i = 0; i < moves.length; ) {
      const batch = moves.slice(i, i + measurers.length).map((move) => apply(current, move));
      const costs = await Promise.all(batch.map((order, k) => measurers[k](order)));
      let k = 0;
      while (k < batch.length) {
        const cost = costs[k++];
        if (cost < best) {
          best = cost;
          current = batch[k - 1];
          break;
        }
      }
      i += k;
    }
  } finally {
    for (const worker of workers) {
      worker.removeAllListeners('exit');
      await worker.terminate();
    }
  }

  const out = second.write(current, data);
  if (!WebAssembly.validate(out)) throw new Error('the reordered module does not validate');
  // A permutation and nothing else: read back and put in the old order, it is the same module.
  const inverse = (q) => q.reduce((inv, old, k) => ((inv[old] = k), inv), []);
  if (!parse(out).write(inverse(current), inverse(data)).equals(optimized)) {
    throw new Error('the reordered module is not a permutation of the functions');
  }
  const before = size(input);
  if (best < before) {
    fs.writeFileSync(file, out);
    console.log(
      `reordered ${n} functions and ${data.length} data segments: wasm deflate ${before} -> ${greedy} (greedy) -> ${best} B (${MOVES} moves)`,
    );
  } else {
    console.log(`reordering ${n} functions did not pay (${before} -> ${best} B): kept the order`);
  }
}
