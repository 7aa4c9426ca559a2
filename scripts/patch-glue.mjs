// Patches wasm-bindgen's glue (toolgate.js, before it is bundled and minified) for the package,
// run by scripts/build.sh: node scripts/patch-glue.mjs <pkg dir>/toolgate.js
//
// A method called on a freed object (or from inside its `free()`): wasm-bindgen's checks throw a
// plain Error ("null pointer passed to rust"); the package throws a ToolgateError `invalid_state`,
// as for every other misuse, and its async methods return it rejected. (Browser tests run
// wasm-bindgen-test's own glue: tests/e2e/freed.)
// Every patch first checks that wasm-bindgen wrote what it expects, and fails the build otherwise.
import fs from 'node:fs';

const file = process.argv[2];
// The functions of the import object as arrows (the wasm calls them plainly: none reads
// `this` or `arguments`, none is constructed), which minify shorter.
const imports = /\nfunction __wbg_get_imports\(\) \{\n[^]*?\n\}\n/;
const raw = fs.readFileSync(file, "utf8").replace(imports, (block) => {
  block = block.replace(/^ *\/\/.*\n/gm, "");
  const fn = /^( {8}\w+: )function\(([\w, ]*)\) \{$/gm;
  if ((block.match(fn) || []).length < 10 || /\bthis\b|\barguments\b/.test(block))
    throw new Error("wasm-bindgen glue: import object not as expected");
  // And without `__proto__: null`, which matters only for a name the object lacks: the wasm
  // reads only its imports, each an own property.
  const proto = /^ *__proto__: null,\n/gm;
  if ((block.match(proto) || []).length !== 2) throw new Error("wasm-bindgen glue: import object not as expected");
  // One whose body is a single statement and no `return` (an import with no result, whose
  // value the wasm drops) written as an expression arrow: `(arg0) => clearTimeout(arg0)`.
  const plain = /^( {8}\w+: )function\(([\w, ]*)\) \{\n {12}(?!(?:return|const|let|var|throw|if|for|while|try)\b)([^\n;{}]+);\n {8}\},$/gm;
  if ((block.match(plain) || []).length < 2) throw new Error("wasm-bindgen glue: import object not as expected");
  // The cast of a string in wasm memory to a JS string: `getStringFromWasm0` itself, not a
  // function that calls it with the same two arguments.
  const cast = /^( {8}\w+: )function\(arg0, arg1\) \{\n {12}const ret = getStringFromWasm0\(arg0, arg1\);\n {12}return ret;\n {8}\},$/gm;
  if ((block.match(cast) || []).length !== 1) throw new Error("wasm-bindgen glue: import object not as expected");
  return block.replace(plain, "$1($2) => $3,").replace(cast, "$1getStringFromWasm0,").replace(fn, "$1($2) => {").replace(proto, "");
});
// The error check after each export call, written once per export by wasm-bindgen: one
// function for each of its two forms (a result in `ret[0]` and the error in `ret[1]` when
// `ret[2]` is set; no result and the error in `ret[0]` when `ret[1]` is set).
const glue = [
  [/const ret = (wasm\.\$\w+\([^;]*\));\n\s*if \(ret\[2\]\) \{\n\s*throw takeFromExternrefTable0\(ret\[1\]\);\n\s*\}\n\s*return takeFromExternrefTable0\(ret\[0\]\);/g, "return takeOrThrow($1);"],
  [/const ret = (wasm\.\$\w+\([^;]*\));\n\s*if \(ret\[1\]\) \{\n\s*throw takeFromExternrefTable0\(ret\[0\]\);\n\s*\}/g, "throwIfError($1);"],
].reduce((g, [re, to]) => {
  if ((g.match(re) || []).length < 5) throw new Error("wasm-bindgen glue: export calls not as expected");
  return g.replace(re, to);
}, raw) +
  "function takeOrThrow(ret) {\n  if (ret[2]) throw takeFromExternrefTable0(ret[1]);\n  return takeFromExternrefTable0(ret[0]);\n}\n" +
  "function throwIfError(ret) {\n  if (ret[1]) throw takeFromExternrefTable0(ret[0]);\n}\n";
// A string in wasm memory read as the bytes there (one function reads both), decoded.
const views = "function getArrayU8FromWasm0(ptr, len) {\n    ptr = ptr >>> 0;\n    return getUint8ArrayMemory0().subarray(ptr / 1, ptr / 1 + len);\n}\n\n" +
  "function getStringFromWasm0(ptr, len) {\n    ptr = ptr >>> 0;\n    return decodeText(getUint8ArrayMemory0().subarray(ptr, ptr + len));\n}\n";
if (glue.split(views).length !== 2) throw new Error("wasm-bindgen glue: memory views not as expected");
// The constructors without their closing `return this;` (a constructor returns `this` anyway).
const ctorEnd = /(Finalization\.register\(this, this\.__wbg_ptr, this\);)\n\s*return this;/g;
if ((glue.match(ctorEnd) || []).length !== 2) throw new Error("wasm-bindgen glue: constructors not as expected");
// The byte limit of the decoder (for Safari) written where it is read: terser keeps a constant
// that a function reads, and hoisting puts the function before it.
const limit = ["const MAX_SAFARI_DECODE_BYTES = 2146435072;\n", ">= MAX_SAFARI_DECODE_BYTES"];
if (limit.some((l) => glue.split(l).length !== 2) || glue.split("MAX_SAFARI_DECODE_BYTES").length !== 3)
  throw new Error("wasm-bindgen glue: decoder limit not as expected");
// Three functions of the glue as arrows, which minify shorter (called once the module has run,
// none reads `this` or `arguments`; the others stay, where hoisting them together pays more).
const arrows = ["__wbg_get_imports", "makeClosure", "__wbg_finalize_init"];
const declared = /^function (\w+)\(([\w, ]*)\) \{\n([^]*?)\n\}\n/gm;
const toArrow = (m, name, args, body) => {
  if (!arrows.includes(name)) return m;
  if (/\bthis\b|\barguments\b/.test(body)) throw new Error("wasm-bindgen glue: " + name + " reads this or arguments");
  return "const " + name + " = (" + args + ") => {\n" + body + "\n};\n";
};
if (arrows.some((name) => glue.split("\nfunction " + name + "(").length !== 2))
  throw new Error("wasm-bindgen glue: functions to write as arrows not as expected");
// `Symbol.dispose` set to `free` on both classes in one loop, once both are defined (appended
// below, with `pending`).
const dispose = /^if \(Symbol\.dispose\) (\w+)\.prototype\[Symbol\.dispose\] = \1\.prototype\.free;\n/gm;
if ((glue.match(dispose) || []).join("") !== "if (Symbol.dispose) ApprovalClient.prototype[Symbol.dispose] = ApprovalClient.prototype.free;\n" +
  "if (Symbol.dispose) Decisions.prototype[Symbol.dispose] = Decisions.prototype.free;\n")
  throw new Error("wasm-bindgen glue: Symbol.dispose not as expected");
// The module (`wasmModule`) is kept nowhere: nothing reads it.
const kept = ["function __wbg_finalize_init(instance, module) {", "    wasmModule = module;\n",
  "const { instance, module } = await __wbg_load(", "__wbg_finalize_init(instance, module);"];
if (kept.some((k, i) => glue.split(k).length !== (i == 3 ? 3 : 2))) throw new Error("wasm-bindgen glue: __wbg_finalize_init not as expected");
const from = "throw new Error(getStringFromWasm0(arg0, arg1));";
if (glue.split(from).length !== 2 || !/import \{[^}]*\btoolgateError\b[^}]*\}/.test(glue))
  throw new Error("the glue has not the one __wbindgen_throw (or toolgateError import) expected");
// And `free()` a second time does nothing (as a dispose should), in both classes. `free()`
// from code the object itself is running (a listener that `approve()` calls) lets go of the
// object, which is dropped when that call returns, as a collected one is: wasm-bindgen does
// that too but throws its ownership error first ("attempted to take ownership of Rust value
// while it was borrowed"), with `0` for `allow_delayed`. (Its `__destroy_into_raw`, which
// only `free()` calls, written into it.)
const frees = /__destroy_into_raw\(\) \{\n\s*const ptr = this\.__wbg_ptr;\n\s*this\.__wbg_ptr = 0;\n\s*(\w+)\.unregister\(this\);\n\s*return ptr;\n\s*\}\n\s*free\(\) \{\n\s*const ptr = this\.__destroy_into_raw\(\);\n\s*(wasm\.[\w$]+)\(ptr, 0\);/g;
if ((glue.match(frees) || []).length !== 2 || glue.split("__destroy_into_raw").length !== 5)
  throw new Error("expected two free() in the glue, as wasm-bindgen writes them");
// The async methods of ApprovalClient reject, never throw (a freed client is refused by a
// check that throws before the method can make its promise). A client is kept alive while
// its promise is pending (the crate holds the promise: a `WeakMap` from it to the client), so
// `new ApprovalClient(o).send(text)` is not collected, and so freed, before it is done. Each
// of those methods makes its call through `pending`, which does both.
const async = ["load", "send", "submit", "rejectAllAndSend"];
const asyncs = new RegExp("^(    (?:" + async.join("|") + ")\\([^)]*\\) \\{\\n)\\s*const ret = (wasm\\.\\$\\w+\\([^;]*\\));\\n\\s*return ret;", "gm");
if ((glue.match(asyncs) || []).length !== async.length) throw new Error("the async methods of ApprovalClient not as expected in the glue");
const appended = "\nconst keep = new WeakMap();\n" +
  "if (Symbol.dispose) for (const c of [ApprovalClient, Decisions]) c.prototype[Symbol.dispose] = c.prototype.free;\n" +
  "function pending(client, call) {\n" +
  "  try { const p = call(); keep.set(p, client); return p; } catch (e) { return Promise.reject(e); }\n" +
  "}\n";
// The wasm-bindgen loader: a shorter warning where the server gives the module another MIME
// type, and no warning for the module (or its bytes) given bare to `init`/`initSync` (both
// forms keep working): about 120 B of gzip. (Its `new Error(...)` for a failed fetch written
// `Error(...)`, which is the same.)
const mime = /console\.warn\("`WebAssembly\.instantiateStreaming` failed [^"]*",\s*e\);/;
// (And its test of the response type, a `switch` in a function of its own, as one `includes`.)
const types = /expectedResponseType\(module\.type\);([^]*)\n *function expectedResponseType\(type\) \{\n *switch \(type\) \{\n *case \x27basic\x27: case \x27cors\x27: case \x27default\x27: return true;\n *\}\n *return false;\n *\}\n/;
const bare = /\} else \{\s*console\.warn\(\x27using deprecated parameters for [^\x27]*\x27\)\s*\}/g;
const failed = "throw new Error(`failed to fetch";
if (!mime.test(glue) || !types.test(glue) || glue.split(failed).length !== 2 || (glue.match(bare) || []).length !== 2) throw new Error("wasm-bindgen loader not as expected");
// An HTML page where the module should be (a dev server that did not ship it: the fallback
// page) fails in words, not with a compile error about magic bytes after a MIME warning.
const page = "if (/html/i.test(module.headers.get(\"Content-Type\"))) " +
  "throw Error(module.url + \" is an HTML page, not toolgate_bg.wasm (README: Bundlers)\"); ";
// The finalization registries without their stand-in for engines that lack FinalizationRegistry:
// every engine that can compile the module (it uses wasm SIMD: Chrome 91, Firefox 89, Safari 16.4,
// Node 16.4) has it (Chrome 84, Firefox 79, Safari 14.1, Node 14.6).
const registries = /\(typeof FinalizationRegistry === \x27undefined\x27\)\n\s*\? \{ register: \(\) => \{\}, unregister: \(\) => \{\} \}\n\s*: (new FinalizationRegistry\()/g;
if ((glue.match(registries) || []).length !== 3) throw new Error("wasm-bindgen glue: finalization registries not as expected");
// Before `init()` (or after a failed one) every export throws a ToolgateError saying so, not
// a TypeError about a property of `undefined`; `isToolgateError` is the function of fast.js,
// which works then too (the crate keeps a Rust twin for its tests, not exported).
const unset = "let wasmModule, wasmInstance, wasm;", isSet = "if (wasm !== undefined) return wasm;";
const fast = glue.match(/from \x27(\.\/snippets\/[^\x27]+\/src\/wasm\/fast\.js)\x27/);
if (glue.split(unset).length !== 2 || glue.split(isSet).length !== 3 || !fast || /export function isToolgateError/.test(glue))
  throw new Error("wasm-bindgen glue: module state or imports not as expected");
fs.writeFileSync(file, glue.replace(mime, page + "console.warn(\"toolgate_bg.wasm is not served as application/wasm (a slower start):\", e);")
  .replace(unset, "let wasmModule, wasmInstance, wasm = new Proxy({}, { get() { " +
    "throw toolgateError(\"invalid_state\", \"call init() first\"); } });")
  .replaceAll(isSet, "if (wasmInstance) return wasm;")
  .replace(types, "[\"basic\", \"cors\", \"default\"].includes(module.type);$1").replace(bare, "}").replace(from, "const m = getStringFromWasm0(arg0, arg1); " +
  "throw toolgateError(\"invalid_state\", /^null pointer/.test(m) ? \"the object was freed\" : m);")
  .replace(views, "function getArrayU8FromWasm0(ptr, len) {\n    ptr = ptr >>> 0;\n    return getUint8ArrayMemory0().subarray(ptr, ptr + len);\n}\n" +
    "function getStringFromWasm0(ptr, len) {\n    return decodeText(getArrayU8FromWasm0(ptr, len));\n}\n")
  .replace(kept[0], "function __wbg_finalize_init(instance) {").replace(kept[1], "")
  .replace(kept[2], "const { instance } = await __wbg_load(").replaceAll(kept[3], "__wbg_finalize_init(instance);")
  .replace(registries, "$1").replace(limit[0], "").replace(limit[1], ">= 2146435072").replace(declared, toArrow).replace(dispose, "").replace(failed, "throw Error(`failed to fetch").replace(ctorEnd, "$1").replace(asyncs, "$1        return pending(this, () => $2);")
  .replace(frees, "free() {\n        const ptr = this.__wbg_ptr;\n        if (!ptr) return;\n        this.__wbg_ptr = 0;\n" +
    "        $1.unregister(this);\n        $2(ptr, 1);") + appended +
  "export { isToolgateError } from \"" + fast[1] + "\";\n");
