// Prints the size of the built package (wasm raw and gzip, JS glue gzip) and, with
// --max-gzip BYTES, fails when wasm + glue gzip exceeds the budget. `--dir pkg/neuron`: the
// Neuron-only entry point instead of the package's main one (pkg/).
import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';

const gz = (buf) => gzipSync(buf, { level: 9 }).length;
const d = process.argv.indexOf('--dir');
const dir = new URL(`../${d > 0 ? process.argv[d + 1].replace(/\/*$/, '/') : 'pkg/'}`, import.meta.url);
// The module beside the glue: `toolgate_bg.wasm`, or `toolgate_neuron_bg.wasm` in pkg/neuron/.
const wasmName = readFileSync(new URL('toolgate.js', dir), 'utf8').match(/toolgate(_neuron)?_bg\.wasm/)?.[0];
if (!wasmName) throw new Error('no module name in the glue');
const wasm = readFileSync(new URL(wasmName, dir));
const glue = readFileSync(new URL('toolgate.js', dir));
const figures = {
  wasmRaw: wasm.length,
  wasmGzip: gz(wasm),
  glueRaw: glue.length,
  glueGzip: gz(glue),
};
figures.totalGzip = figures.wasmGzip + figures.glueGzip;
const kb = (n) => `${(n / 1024).toFixed(1)} KiB`;
const label = d > 0 ? `size of ${process.argv[d + 1]}` : 'size';
console.log(
  `${label}: wasm ${kb(figures.wasmRaw)} raw, ${kb(figures.wasmGzip)} gzip; ` +
    `JS glue ${kb(figures.glueRaw)} raw, ${kb(figures.glueGzip)} gzip; ` +
    `wasm + glue ${kb(figures.totalGzip)} gzip`,
);
const i = process.argv.indexOf('--max-gzip');
if (i > 0) {
  const max = Number(process.argv[i + 1]);
  if (!(max > 0)) throw new Error('--max-gzip needs a byte count');
  if (figures.totalGzip > max) {
    console.error(`size budget exceeded: ${figures.totalGzip} B gzip > ${max} B`);
    process.exit(1);
  }
  console.log(`size budget: ${figures.totalGzip} B <= ${max} B gzip: ok`);
}
