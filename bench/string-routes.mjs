// What each route from a JS string into wasm costs, against JSON.parse, on the 10 MB bench thread:
// the evidence behind BENCHMARKS.md's "from a string" paragraph. `pendingApprovals(string)` can only
// beat JSON.parse + filter 3x by reading the whole string in under a third of JSON.parse's time;
// this times every way there is to read it (TextEncoder.encodeInto into a preallocated buffer, JS
// String Builtins into a GC array and scans of it, charCodeAt loops in wasm and in JS, an indexOf
// walk over the quotes, a regular expression checking every token). Each figure is the median of 9 samples after a warm-up, gc() before each.
//
//   node bench/string-routes.mjs [--mb 10]
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import binaryen from 'binaryen';
import { chromium } from 'playwright-core';
import { neuronThread } from './page/gen.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const mbAt = process.argv.indexOf('--mb');
const mb = mbAt > 0 ? Number(process.argv[mbAt + 1]) : 10;

const module = binaryen.parseText(fs.readFileSync(path.join(here, 'string-routes.wat'), 'utf8'));
const F = binaryen.Features;
module.setFeatures(F.MVP | F.GC | F.ReferenceTypes | F.BulkMemory | F.SignExt | F.MutableGlobals);
if (!module.validate()) throw new Error('string-routes.wat does not validate');
const wasm = Buffer.from(module.emitBinary()).toString('base64');
const thread = neuronThread(mb * 1e6); // MB as bench/run.mjs counts them

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-quic', '--disable-background-networking',
    '--disable-component-update', '--disable-sync', '--js-flags=--expose-gc'],
});
try {
  const page = await browser.newPage();
  await page.goto('about:blank');
  const rows = await page.evaluate(async ([s, w]) => {
    const bytes = Uint8Array.from(atob(w), (c) => c.charCodeAt(0));
    const { instance } = await WebAssembly.instantiate(bytes, {}, { builtins: ['js-string'] });
    const x = instance.exports;
    x.memory.grow(Math.ceil((s.length * 2) / 65536));
    const utf8 = new Uint8Array(s.length * 3);
    const encoder = new TextEncoder();
    const median = (f) => {
      f();
      const t = [];
      for (let i = 0; i < 9; i++) {
        gc();
        const a = performance.now();
        f();
        t.push(performance.now() - a);
      }
      return t.sort((a, b) => a - b)[4];
    };
    const count = (u) => u === 34 || u === 92;
    const jsScan = () => {
      let c = 0;
      for (let i = 0; i < s.length; i++) c += count(s.charCodeAt(i));
      return c;
    };
    // Every `"` found by indexOf, each checked for a preceding backslash: a string walk that skips
    // ordinary units in native code.
    const indexOfWalk = () => {
      let c = 0;
      for (let i = s.indexOf('"'); i >= 0; i = s.indexOf('"', i + 1)) c += s.charCodeAt(i - 1) === 92 ? 0 : 1;
      return c;
    };
    // Every JSON token checked by one regular expression, run by V8's regexp compiler as native
    // code: strings (escapes, no raw control characters), numbers, literals, punctuation. It checks
    // no nesting or order (a regular expression cannot balance brackets) and finds nothing.
    const tokens = /^(?:[ \t\n\r{}[\],:]+|"[^"\\\x00-\x1f]*(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\\x00-\x1f]*)*"|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null)*$/;
    if (!tokens.test(s)) throw new Error('the token check rejects the thread');
    x.copyToArray(s);
    if (x.scanArray() !== jsScan() || x.scanString(s) !== jsScan()) throw new Error('scans disagree');
    const parse = median(() => JSON.parse(s));
    const rows = [
      ['JSON.parse (the baseline)', parse],
      ['TextEncoder.encodeInto into wasm memory', median(() => encoder.encodeInto(s, utf8))],
      ['indexOf walk over every "', median(indexOfWalk)],
      ['charCodeAt loop in JS, counting " and \\', median(jsScan)],
      ['one regular expression checking every token (no nesting)', median(() => tokens.test(s))],
      ['js-string builtins: intoCharCodeArray (copy to a GC array)', median(() => x.copyToArray(s))],
      ['js-string builtins: scan of the GC array', median(() => x.scanArray())],
      ['js-string builtins: GC array to linear memory', median(() => x.arrayToMemory())],
      ['js-string builtins: charCodeAt loop in wasm', median(() => x.scanString(s))],
    ];
    return { units: s.length, rows };
  }, [thread, wasm]);
  const parse = rows.rows[0][1];
  console.log(`${mb} MB thread, ${rows.units.toLocaleString('en')} UTF-16 units; a 3x pendingApprovals(string) needs all its work under ${(parse / 3).toFixed(1)} ms`);
  console.log('| route | median | of JSON.parse |');
  console.log('| --- | ---: | ---: |');
  for (const [name, ms] of rows.rows) console.log(`| ${name} | ${ms.toFixed(1)} ms | ${(ms / parse).toFixed(2)} |`);
} finally {
  await browser.close();
}
