// Renames the wasm module's imports from wasm-bindgen's glue module ("./toolgate_bg.js",
// "__wbg_fetch_80c0335ad90dbd8a", ...) to short names (module "w", "a", "b", ...), its imports
// from the crate's own JS ("./snippets/toolgate-<hash>/src/wasm/fast.js", namespace-imported by the
// glue once per function) to short names of that same module "w" (the glue imports them by name),
// and its exports
// but `memory` ("parseThread", "wasm_bindgen__convert__closures_____invoke__hb98d63cc49481475",
// ...) to "$a", "$b", ..., consistently in pkg/toolgate_bg.wasm, pkg/toolgate.js (its import object
// and its `wasm.<export>` accesses) and the InitOutput type of pkg/toolgate.d.ts, before the glue is
// minified. wasm-bindgen's names carry 16-digit hashes, which gzip cannot compress, and each name
// appears in the module and in the glue: together about 3 KiB of the gzipped package. The JS API is
// the glue's own exports, which keep their names.
//
// Usage: node scripts/shorten-names.mjs [pkg dir]   (a second run finds the names short and stops)
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const dir = process.argv[2] ?? 'pkg';
const wasmPath = path.join(dir, 'toolgate_bg.wasm');
const gluePath = path.join(dir, 'toolgate.js');
const GLUE_MODULE = './toolgate_bg.js';
const SHORT_MODULE = 'w';

const bytes = readFileSync(wasmPath);
let glue = readFileSync(gluePath, 'utf8');

// --- a minimal reader and writer of the binary format, enough for the import section
function readU32(buf, at) {
  let result = 0;
  let shift = 0;
  for (;;) {
    const b = buf[at++];
    result |= (b & 0x7f) << shift;
    if ((b & 0x80) === 0) return [result >>> 0, at];
    shift += 7;
  }
}
function u32(n) {
  const out = [];
  do {
    let b = n & 0x7f;
    n >>>= 7;
    if (n !== 0) b |= 0x80;
    out.push(b);
  } while (n !== 0);
  return out;
}
const utf8 = new TextDecoder();
const enc = new TextEncoder();
function readName(buf, at) {
  const [len, p] = readU32(buf, at);
  return [utf8.decode(buf.subarray(p, p + len)), p + len];
}
function name(s) {
  const b = enc.encode(s);
  return [...u32(b.length), ...b];
}
function skipLimits(buf, at) {
  const flags = buf[at++];
  [, at] = readU32(buf, at);
  if (flags & 1) [, at] = readU32(buf, at);
  return at;
}

if (bytes.readUInt32LE(0) !== 0x6d736100) throw new Error(`${wasmPath} is not a wasm module`);
const sections = [];
let at = 8;
while (at < bytes.length) {
  const id = bytes[at];
  const [size, start] = readU32(bytes, at + 1);
  sections.push({ id, head: at, start, end: start + size });
  at = start + size;
}
const imports = sections.find((s) => s.id === 2);
if (!imports) throw new Error('no import section');

// Short names in order of appearance: a..z, A..Z, then two letters.
const ALPHA = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ';
const short = (i) => (i < ALPHA.length ? ALPHA[i] : ALPHA[Math.floor(i / ALPHA.length) - 1] + ALPHA[i % ALPHA.length]);

const renames = new Map();
const snippetRenames = new Map();
const body = [];
let p = imports.start;
let count;
[count, p] = readU32(bytes, p);
body.push(...u32(count));
for (let i = 0; i < count; i++) {
  let mod, field;
  [mod, p] = readName(bytes, p);
  [field, p] = readName(bytes, p);
  const descStart = p;
  const kind = bytes[p++];
  if (kind === 0x00) [, p] = readU32(bytes, p); // function: type index
  else if (kind === 0x01) p = skipLimits(bytes, p + 1); // table: reftype, limits
  else if (kind === 0x02) p = skipLimits(bytes, p); // memory: limits
  else if (kind === 0x03) p += 2; // global: valtype, mutability
  else if (kind === 0x04) [, p] = readU32(bytes, p + 1); // tag: attribute, type index
  else throw new Error(`unknown import kind ${kind}`);
  if (mod === GLUE_MODULE) {
    if (!renames.has(field)) renames.set(field, short(renames.size));
    mod = SHORT_MODULE;
    field = renames.get(field);
  } else if (mod.startsWith('./snippets/')) {
    // Taken into the glue's module too, as a named import of the snippet: no namespace object.
    const key = `${mod}\0${field}`;
    if (!renames.has(key)) renames.set(key, short(renames.size));
    if (!snippetRenames.has(mod)) snippetRenames.set(mod, new Map());
    snippetRenames.get(mod).set(field, renames.get(key));
    mod = SHORT_MODULE;
    field = renames.get(key);
  }
  body.push(...name(mod), ...name(field), ...bytes.subarray(descStart, p));
}
if (p !== imports.end) throw new Error('import section not read to its end');

if (renames.size === 0) {
  console.log('names: already short');
  process.exit(0);
}

// The exports, but `memory`: renamed in the export section, in the glue's `wasm.<name>` accesses
// and in the InitOutput type of the declarations.
const exportsSection = sections.find((s) => s.id === 7);
const exportRenames = new Map();
const exportBody = [];
{
  let q = exportsSection.start;
  let n;
  [n, q] = readU32(bytes, q);
  exportBody.push(...u32(n));
  for (let i = 0; i < n; i++) {
    let field;
    [field, q] = readName(bytes, q);
    const kind = bytes[q++];
    const idxStart = q;
    [, q] = readU32(bytes, q);
    if (field !== 'memory') {
      exportRenames.set(field, `$${short(exportRenames.size)}`);
      field = exportRenames.get(field);
    }
    exportBody.push(...name(field), kind, ...bytes.subarray(idxStart, q));
  }
  if (q !== exportsSection.end) throw new Error('export section not read to its end');
}
const dtsPath = path.join(dir, 'toolgate.d.ts');
let dts = readFileSync(dtsPath, 'utf8');
for (const [long, s] of exportRenames) {
  const re = new RegExp(`\\bwasm\\.${long}\\b`, 'g');
  glue = glue.replace(re, `wasm.${s}`);
  if (new RegExp(`\\b(wasm|exports)\\s*(\\.|\\[)\\s*['"]?${long}\\b`).test(glue)) throw new Error(`export ${long} still used by name`);
  dts = dts.replace(new RegExp(`(readonly )${long.replace(/\$/g, '\\$')}(:)`), `$1${s}$2`);
}

// The glue: the import object's keys, and the module key of the object it returns.
for (const [long, s] of renames) {
  if (long.includes('\0')) continue;
  const re = new RegExp(`\\b${long}(?=\\s*:\\s*function\\b)`, 'g');
  const hits = glue.match(re)?.length ?? 0;
  if (hits !== 1) throw new Error(`import ${long}: ${hits} definitions in the glue, expected 1`);
  glue = glue.replace(re, s);
  if (new RegExp(`\\b${long}\\b`).test(glue)) throw new Error(`import ${long} still named in the glue`);
}
const moduleKey = `"${GLUE_MODULE}": import0`;
if (glue.split(moduleKey).length !== 2) throw new Error(`expected one ${moduleKey} in the glue`);
glue = glue.replace(moduleKey, `"${SHORT_MODULE}": import0`);
// The snippet modules: each one's namespace imports (`import * as importN from "<path>"`, one per
// function the wasm imports from it, each an entry `"<path>": importN` of the import object) become
// one named import, its functions entries of the glue module's import object under their short
// names. (A namespace object costs the bundle a getter per export of the snippet.)
let n = 0;
for (const [mod, fields] of snippetRenames) {
  const quoted = mod.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  const star = new RegExp(`^import \\* as (import\\d+) from ["']${quoted}["'];?\\n`, 'gm');
  const names = [...glue.matchAll(star)].map((m) => m[1]);
  if (!names.length) throw new Error(`no namespace import of ${mod} in the glue`);
  const local = [...fields].map(([field, s]) => [field, `__snippet${n++}_${field}`, s]);
  const named = `import { ${local.map(([f, l]) => `${f} as ${l}`).join(', ')} } from '${mod}';\n`;
  let first = true;
  glue = glue.replace(star, () => (first ? ((first = false), named) : ''));
  for (const ns of names) {
    const key = new RegExp(`^\\s*"${quoted}": ${ns},\\n`, 'm');
    if (!key.test(glue)) throw new Error(`snippet module ${mod} (${ns}) not in the import object`);
    glue = glue.replace(key, '');
    if (new RegExp(`\\b${ns}\\b`).test(glue)) throw new Error(`namespace ${ns} still used in the glue`);
  }
  const entries = local.map(([, l, s]) => `\n        ${s}: ${l},`).join('');
  const head = 'const import0 = {\n        __proto__: null,';
  if (glue.split(head).length !== 2) throw new Error('expected one import0 object in the glue');
  glue = glue.replace(head, head + entries);
}

const parts = [];
let from = 0;
for (const [section, id, content] of [
  [imports, 2, body],
  [exportsSection, 7, exportBody],
]) {
  parts.push(bytes.subarray(from, section.head), Buffer.from([id, ...u32(content.length), ...content]));
  from = section.end;
}
parts.push(bytes.subarray(from));
const out = Buffer.concat(parts);
// The result must still be a valid module with the new import names.
const mod = new WebAssembly.Module(out);
const left = WebAssembly.Module.imports(mod).filter((i) => i.module !== SHORT_MODULE);
if (left.length) throw new Error('imports left under a long module name');

writeFileSync(wasmPath, out);
writeFileSync(gluePath, glue);
writeFileSync(dtsPath, dts);
console.log(`names: ${renames.size} imports and ${exportRenames.size} exports shortened, wasm ${bytes.length} -> ${out.length} bytes`);
