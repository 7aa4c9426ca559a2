// The benchmark harness: `npm run bench` (which builds pkg/ first) or `node bench/run.mjs`.
//
// Starts the reference endpoint (a free port, a temporary data directory, no chunk delay) serving
// the bench page (bench/page/) at / and the built package at /pkg/, opens the page in headless
// Chromium (playwright-core, /usr/bin/chromium), runs the cases in the page, measures the package
// size against the client part of the AI SDK (bundled here with esbuild), and prints one results
// table and a size table (Markdown). Progress goes to stderr, the tables to stdout.
//
// Options:
//   --quick         smaller and fewer runs (checks the harness; the figures are not the ones to keep)
//   --update        also write the tables and the machine into BENCHMARKS.md (between its markers)
//   --json FILE     also write every sample as JSON
//   --only LIST     comma-separated subset of: pending,parse,stream,size,turns,memory,reload
import { execFileSync, spawn } from 'node:child_process';
import { readFileSync, writeFileSync, mkdtempSync, rmSync, accessSync, constants as fsConstants } from 'node:fs';
import { tmpdir, cpus, totalmem, loadavg } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants as zlibConstants, gzipSync } from 'node:zlib';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const argv = process.argv.slice(2);
const flag = (name) => argv.includes(name);
const opt = (name) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const QUICK = flag('--quick');
const ONLY = opt('--only') ? new Set(opt('--only').split(',')) : null;
const want = (c) => !ONLY || ONLY.has(c);
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

const log = (...a) => console.error('[bench]', ...a);
const started = Date.now();

// ------------------------------------------------------------------------------------------------
// Plan

const MB = 1_000_000;
const SIZES = QUICK ? [0.1 * MB, 1 * MB] : [0.1 * MB, 1 * MB, 10 * MB, 50 * MB];
const RUNS = (bytes) => (QUICK ? 7 : bytes <= 0.1 * MB ? 15 : bytes <= 1 * MB ? 11 : 7);
const WARMUPS = (bytes) => (bytes >= 50 * MB ? 1 : 2);
const sizeLabel = (b) => `${b / MB} MB`;

// ------------------------------------------------------------------------------------------------
// Case 4: size (Node only)

const gz = (buf) => gzipSync(buf, { level: 9 }).length;
// Brotli at its highest quality, as a server or CDN serving the files precompressed would: for
// information (the target is gzip's).
const br = (buf) =>
  brotliCompressSync(buf, {
    params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 11, [zlibConstants.BROTLI_PARAM_SIZE_HINT]: buf.length },
  }).length;

async function sizes() {
  const wasm = readFileSync(path.join(ROOT, 'pkg/toolgate_bg.wasm'));
  const glue = readFileSync(path.join(ROOT, 'pkg/toolgate.js'));
  const esbuild = await import('esbuild');
  const aiVersion = JSON.parse(readFileSync(path.join(ROOT, 'node_modules/ai/package.json'), 'utf8')).version;
  const built = await esbuild.build({
    absWorkingDir: ROOT,
    entryPoints: ['bench/ai-sdk-entry.mjs'],
    bundle: true,
    minify: true,
    format: 'esm',
    platform: 'browser',
    write: false,
    logLevel: 'warning',
  });
  const ai = built.outputFiles[0].contents;
  // The Neuron-only entry point (`toolgate/neuron`), when built.
  let neuron = null;
  try {
    const nw = readFileSync(path.join(ROOT, 'pkg/neuron/toolgate_neuron_bg.wasm'));
    const ng = readFileSync(path.join(ROOT, 'pkg/neuron/toolgate.js'));
    neuron = { raw: nw.length + ng.length, gzip: gz(nw) + gz(ng), brotli: br(nw) + br(ng) };
  } catch {}
  const [wasmGzip, glueGzip, wasmBrotli, glueBrotli] = [gz(wasm), gz(glue), br(wasm), br(glue)];
  return {
    neuron,
    wasmRaw: wasm.length,
    wasmGzip,
    glueRaw: glue.length,
    glueGzip,
    totalGzip: wasmGzip + glueGzip,
    wasmBrotli,
    glueBrotli,
    totalBrotli: wasmBrotli + glueBrotli,
    aiVersion,
    esbuildVersion: esbuild.version,
    aiRaw: ai.length,
    aiGzip: gz(ai),
    aiBrotli: br(ai),
  };
}

// ------------------------------------------------------------------------------------------------
// The endpoint and the browser

// The endpoint's data directory: in memory (`/dev/shm`) where there is one, so the endpoint's
// fsyncs (the same for both sides of a turn) do not add the disk's variance to case 5.
function dataRoot() {
  try {
    accessSync('/dev/shm', fsConstants.W_OK);
    return '/dev/shm';
  } catch {
    return tmpdir();
  }
}

async function startEndpoint(dataDir) {
  const child = spawn(process.execPath, [path.join(ROOT, 'www/server/main.mjs')], {
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: '0',
      DATA_DIR: dataDir,
      QUIET: '1',
      CHUNK_DELAY_MS: '0',
      WWW_DIR: path.join(ROOT, 'bench/page'),
      PKG_DIR: path.join(ROOT, 'pkg'),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the endpoint did not start:\n${out}`)), 15000);
    const onData = (d) => {
      out += d;
      const m = out.match(/toolgate endpoint listening on (http\S+)/);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.on('exit', (code) => reject(new Error(`the endpoint exited (${code}):\n${out}`)));
  });
  return { url, child };
}

async function launch() {
  const { chromium } = await import('playwright-core');
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--no-first-run',
      '--disable-quic',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      // gc() before each timed sample, so one side does not pay for the other's garbage.
      '--js-flags=--expose-gc',
    ],
  });
}

// ------------------------------------------------------------------------------------------------
// Machine

function rustcVersion() {
  try {
    return execFileSync('rustc', ['-V'], { encoding: 'utf8' }).trim().split(' ').slice(1, 2).join('') || 'unknown';
  } catch {
    return 'unknown';
  }
}

function machine(browserVersion) {
  let cpu = cpus()[0]?.model ?? 'unknown';
  try {
    const m = readFileSync('/proc/cpuinfo', 'utf8').match(/^model name\s*:\s*(.+)$/m);
    if (m) cpu = m[1].trim();
  } catch {}
  return {
    cpu,
    cores: cpus().length,
    ramGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    chromium: browserVersion,
    node: process.version,
    // The compiler in this environment: what `npm run bench` built pkg/ with (sizes depend on it).
    rustc: rustcVersion(),
    date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    loadStart: loadavg().map((x) => x.toFixed(2)).join(' '),
    dataRoot: dataRoot(),
  };
}

// ------------------------------------------------------------------------------------------------
// Formatting

const ms = (x) => x < 0.1 ? (x * 1000).toFixed(1) + ' µs' : (x >= 100 ? x.toFixed(0) : x >= 10 ? x.toFixed(1) : x >= 1 ? x.toFixed(2) : x.toFixed(3)) + ' ms';
const us = (x) => (x >= 100 ? x.toFixed(0) : x.toFixed(1)) + ' µs';
const x2 = (x) => `${x.toFixed(x >= 100 ? 0 : 2)}×`;
const kib = (n) => `${(n / 1024).toFixed(1)} KiB`;
const sign = (x) => `${x >= 0 ? '+' : ''}${x.toFixed(2)}`;
const yes = (b) => (b === null || b === undefined ? '—' : b ? 'yes' : '**no**');

function table(header, rows) {
  const all = [header, ...rows].map((r) => r.map(String));
  const w = header.map((_, i) => Math.max(3, ...all.map((r) => r[i].length)));
  const line = (r) => `| ${r.map((c, i) => c.padEnd(w[i])).join(' | ')} |`;
  return [line(all[0]), `| ${w.map((n) => '-'.repeat(n)).join(' | ')} |`, ...all.slice(1).map(line)].join('\n');
}

// ------------------------------------------------------------------------------------------------
// Main

async function main() {
  const results = { cases: {} };
  const rows = [];
  const add = (caseName, size, tg, base, ratio, target, met) => rows.push([caseName, size, tg, base, ratio, target, yes(met)]);

  let size = null;
  if (want('size')) {
    log('size: measuring pkg/ and bundling the AI SDK client with esbuild');
    size = await sizes();
    results.size = size;
  }

  const dataDir = mkdtempSync(path.join(dataRoot(), 'toolgate-bench-'));
  const { url, child } = await startEndpoint(dataDir);
  log(`endpoint at ${url}`);
  // The endpoint goes with us, however we end.
  const stop = () => child.kill();
  process.on('exit', stop);
  for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => process.exit(130));
  let browser;
  let env;
  try {
    browser = await launch();
    env = machine(browser.version());
    results.machine = env;
    const page = await browser.newPage();
    page.on('console', (m) => {
      if (m.type() === 'error' || m.type() === 'warning') log(`page ${m.type()}: ${m.text()}`);
    });
    page.on('pageerror', (e) => log(`page error: ${e.message}`));
    await page.goto(`${url}/`);
    await page.waitForFunction(() => window.benchReady !== undefined);
    const info = await page.evaluate(() => window.benchReady);
    results.page = info;
    log(`page ready: gc ${info.gc}, timer resolution ${info.timerResolutionMs} ms`);
    const run = (name, ...args) => page.evaluate(([n, a]) => window.bench[n](...a), [name, args]);

    // Cases 1 and 2.
    if (want('pending') || want('parse')) {
      for (const bytes of SIZES) {
        const label = sizeLabel(bytes);
        const prep = await run('prepareThread', bytes);
        log(`${label}: thread of ${prep.bytes} bytes, ${prep.messages} messages (generated in ${prep.genMs.toFixed(0)} ms)`);
        const o = { runs: RUNS(bytes), warmups: WARMUPS(bytes) };
        const big = bytes >= 10 * MB;
        if (want('pending')) {
          const r = await run('pending', bytes, o);
          results.cases[`pending ${label}`] = { prep, ...r };
          const rs = r.baselineString.median / r.toolgateString.median;
          const rb = r.baselineBytes.median / r.toolgateBytes.median;
          add('1 pendingApprovals(string) vs JSON.parse + filter', label, ms(r.toolgateString.median), ms(r.baselineString.median), x2(rs), big ? '≥ 3×' : '—', big ? rs >= 3 : null);
          add(
            '1 pendingApprovals(Uint8Array) vs decode + JSON.parse + filter',
            label,
            ms(r.toolgateBytes.median),
            ms(r.baselineBytes.median),
            x2(rb),
            big ? '≥ 3×, faster than from string' : '—',
            big ? rb >= 3 && r.toolgateBytes.median < r.toolgateString.median : null,
          );
          const rst = r.baselineString.median / r.toolgateStringTail.median;
          const rbt = r.baselineBytes.median / r.toolgateBytesTail.median;
          add(`1 pendingApprovals(string, { check: 'tail' }) vs JSON.parse + filter`, label, ms(r.toolgateStringTail.median), ms(r.baselineString.median), x2(rst), big ? '≥ 3× (tail check)' : '—', big ? rst >= 3 : null);
          add(`1 pendingApprovals(Uint8Array, { check: 'tail' }) vs decode + JSON.parse + filter`, label, ms(r.toolgateBytesTail.median), ms(r.baselineBytes.median), x2(rbt), '—', null);
          log(`${label}: pending string ${ms(r.toolgateString.median)} vs ${ms(r.baselineString.median)}; bytes ${ms(r.toolgateBytes.median)} vs ${ms(r.baselineBytes.median)}`);
        }
        if (want('parse')) {
          const r = await run('fullParse', bytes, o);
          results.cases[`parse ${label}`] = r;
          const ratio = r.baseline.median / r.toolgate.median;
          const target = bytes === 10 * MB;
          add('2 parseThread vs JSON.parse', label, ms(r.toolgate.median), ms(r.baseline.median), x2(ratio), target ? '≥ 1× (no slower)' : '—', target ? ratio >= 1 : null);
          log(`${label}: parseThread ${ms(r.toolgate.median)} vs JSON.parse ${ms(r.baseline.median)}`);
        }
      }
      await run('dropThreads');
    }

    // Case 3.
    if (want('stream')) {
      const deltas = QUICK ? 2000 : 10000;
      for (const subscribe of [false, true]) {
        const r = await run('streamThroughput', { deltas, subscribe, runs: 7, warmups: 1 });
        results.cases[`stream ${subscribe ? 'ui' : 'core'}`] = r;
        const rate = (t) => `${ms(t)} (${Math.round(deltas / (t / 1000)).toLocaleString('en-US')}/s)`;
        add(
          subscribe
            ? `3 stream ${deltas.toLocaleString('en-US')} deltas, getSnapshot() per change vs JS reader + new object per delta`
            : `3 stream ${deltas.toLocaleString('en-US')} deltas through ApprovalClient vs JS SSE reader + JSON.parse`,
          '1 delta/read',
          rate(r.toolgate.median),
          rate(r.baseline.median),
          x2(r.baseline.median / r.toolgate.median),
          '—',
          null,
        );
        log(`stream (${subscribe ? 'with' : 'without'} subscriber): ${ms(r.toolgate.median)} vs ${ms(r.baseline.median)}; requests ${JSON.stringify(r.requests)}`);
      }
      const ui = results.cases['stream ui'].perDeltaUs;
      add(
        `3 one delta, UI subscriber: first vs last 1,000 deltas of the ${deltas.toLocaleString('en-US')}-delta reply`,
        'reply length',
        `${us(ui.toolgate.early)} → ${us(ui.toolgate.late)}`,
        `${us(ui.baseline.early)} → ${us(ui.baseline.late)}`,
        `growth ${x2(ui.toolgate.late / ui.toolgate.early)}`,
        '—',
        null,
      );
      for (const subscribe of [false, true]) {
        const pd = await run('perDelta', { sizes: [10, 1000], deltas: QUICK ? 500 : 2000, subscribe, runs: 7, warmups: 1 });
        results.cases[`per delta ${subscribe ? 'ui' : 'core'}`] = pd;
        const growth = pd.history1000.median / pd.history10.median;
        add(
          `3 one delta${subscribe ? ', UI subscriber' : ', driver + core'}: thread of 10 → 1,000 earlier messages (JS: reader + JSON.parse${subscribe ? ' + new object' : ''})`,
          '10 → 1000 msgs',
          `${us(pd.history10.median)} → ${us(pd.history1000.median)}`,
          us(pd.baseline.median),
          `growth ${x2(growth)}`,
          'flat (≤ 1.25×)',
          growth <= 1.25,
        );
        log(`per delta (${subscribe ? 'with' : 'without'} subscriber): ${us(pd.history10.median)} (10) vs ${us(pd.history1000.median)} (1000), JS ${us(pd.baseline.median)}`);
      }
    }

    // Case 4 (in the table).
    if (size) {
      add(
        `4 wasm + JS glue, gzip -9, vs AI SDK client (ai@${size.aiVersion}, esbuild --minify)`,
        '',
        kib(size.totalGzip),
        kib(size.aiGzip),
        x2(size.aiGzip / size.totalGzip),
        '≤ 45 KiB',
        size.totalGzip <= 45 * 1024,
      );
      if (size.neuron) {
        add(
          '4 toolgate/neuron (the Neuron dialect alone): wasm + JS glue, gzip -9, vs the same',
          '',
          kib(size.neuron.gzip),
          kib(size.aiGzip),
          x2(size.aiGzip / size.neuron.gzip),
          '—',
          null,
        );
      }
    }

    // Case 5.
    if (want('turns')) {
      // Against the endpoint; against the in-page replay of its answers (the client's own work);
      // and the replay with 10 ms idle before each answer (that work after an idle gap, as
      // between a server's answers: work after an idle gap costs the larger client more).
      const modes = [
        { local: false, where: 'endpoint', key: '', runs: 121, batch: 1 },
        { local: true, where: 'in-page replay', key: ' local', runs: 15, batch: 10 },
        { local: true, pause: 10, where: 'in-page replay, 10 ms idle per answer', key: ' local paused', runs: 31, batch: 3 },
        // The same turn with the default `persist: true`: each decision saved in localStorage as it
        // is made (the other rows turn it off: the baseline keeps nothing).
        { local: true, persist: true, where: 'in-page replay, drafts in localStorage (persist: true, the default)', key: ' local persist', runs: 15, batch: 10 },
        // The same turn with a UI attached: a subscriber taking a snapshot at every change (the
        // baseline makes no UI state, so the difference is the client plus the UI's snapshots:
        // for information, not judged).
        { local: true, subscribe: true, where: 'in-page replay, a UI subscriber taking getSnapshot() at every change', key: ' local subscriber', runs: 15, batch: 10 },
        // A turn at the end of a long thread (loaded before the turn is timed; the baseline keeps
        // no thread): what the client's own work per turn grows with.
        { local: true, history: { neuron: 5 * MB, sidenet: 11000 }, where: 'in-page replay, after a long thread', key: ' local history', runs: 15, batch: 3 },
        // The turn after that one, on the same client (both sides make one untimed turn first):
        // what each turn of a conversation on a long thread costs once it is under way.
        { local: true, history: { neuron: 5 * MB, sidenet: 11000 }, earlier: 1, where: 'in-page replay, the next turn on a long thread', key: ' local history next', runs: 15, batch: 3 },
      ];
      for (const { local, pause, history, earlier, persist, subscribe, where, key, runs, batch } of modes) {
        for (const dialect of ['neuron', 'sidenet']) {
          const r = await run('turns', { dialect, local, pause, history: history?.[dialect], earlier, persist, subscribe, runs: QUICK ? 7 : runs, warmups: 5, batch });
          results.cases[`turn ${dialect}${key}`] = r;
          const over = r.toolgate.median - r.baseline.median;
          // Against the endpoint, its work and the machine's load make single turns vary by
          // milliseconds: judge on the median of 121 paired differences there (with 31 it moved
          // by about 2 ms from one run to the next, with 121 by under 1 ms).
          // The paused replay's turns wait on timers, which jitter by a millisecond: paired too.
          const judged = local && !pause ? over : r.pairedDiffMedian;
          const after = history && (dialect === 'neuron' ? ' (5 MB Neuron thread)' : ' (5.1 MB Sidenet history, 11,000 UI messages)');
          add(
            `5 pause / decide / resume turn, ${dialect} (${r.requests.toolgate} vs ${r.requests.baseline} requests)`,
            `${where}${after || ''}${subscribe ? ` (${r.snapshots} snapshots)` : ''}`,
            ms(r.toolgate.median),
            ms(r.baseline.median),
            `${sign(over)} ms (paired ${sign(r.pairedDiffMedian)})`,
            subscribe ? '—' : '< 1 ms overhead',
            subscribe ? null : judged < 1,
          );
          log(`turn ${dialect} (${where}): ${ms(r.toolgate.median)} vs ${ms(r.baseline.median)} (requests ${JSON.stringify(r.requests)})`);
        }
      }
    }

    // Case 5 beside the turns: what an idle gap costs whatever runs after it (on this machine,
    // this run), for reading the rows with gaps (the endpoint's, the paused replay's).
    if (want('turns')) {
      const idle = await run('idleCost', {});
      results.cases['idle cost'] = idle;
      for (const [name, what] of [
        ['work', 'JSON.parse + JSON.stringify of a drafts record ×10 (plain JS)'],
        ['store', 'localStorage.setItem of a drafts record (what persist writes per decision)'],
      ]) {
        add(
          `5 machine: ${what}, right after 10 ms idle vs back to back`,
          'after idle vs warm',
          us(idle[name].idle),
          us(idle[name].warm),
          `${x2(idle[name].idle / idle[name].warm)} slower`,
          '—',
          null,
        );
      }
      log(`idle cost: ${JSON.stringify(idle)}`);
    }

    // Case 6, memory: one load per fresh page (the module's memory as init() left it).
    if (want('memory')) {
      const loads = [
        ...(QUICK ? [0.5 * MB] : [0.5 * MB, 2 * MB, 5 * MB]).map((size) => ({ dialect: 'neuron', size })),
        ...(QUICK ? [2000] : [2000, 11000]).map((size) => ({ dialect: 'sidenet', size })),
      ];
      for (const load of loads) {
        const fresh = await browser.newPage();
        await fresh.goto(`${url}/`);
        await fresh.waitForFunction(() => window.benchReady !== undefined);
        const r = await fresh.evaluate((a) => window.bench.memoryLoad(a), load);
        await fresh.close();
        results.cases[`memory ${load.dialect} ${load.size}`] = r;
        add(
          `6 wasm memory grown by a client's load (${load.dialect === 'neuron' ? 'Neuron thread' : `Sidenet history, ${load.size.toLocaleString('en-US')} UI messages`}) vs the JSON's size`,
          `${(r.bytes / MB).toFixed(2)} MB`,
          `${(r.grown / MB).toFixed(2)} MB (${r.ms.toFixed(0)} ms)`,
          `${(r.bytes / MB).toFixed(2)} MB`,
          `${(r.grown / r.bytes).toFixed(2)}× the JSON`,
          '—',
          null,
        );
        log(`memory (${load.dialect}, ${r.bytes} B): grown ${r.grown} B, ${r.messages} messages, ${r.ms.toFixed(0)} ms`);
      }
    }

    // Case 7: Neuron's quiet reload after a POST (`reloadAfterPost`, on by default), at the end of
    // a long thread: grown by a turn's two messages, and unchanged.
    if (want('reload')) {
      const size = QUICK ? 1 * MB : 5 * MB;
      for (const grow of [true, false]) {
        const r = await run('reload', { size, grow, runs: QUICK ? 7 : 15, warmups: 2 });
        results.cases[`reload ${grow ? 'grown' : 'unchanged'}`] = r;
        add(
          `7 Neuron quiet reload, load() + getSnapshot() vs await response.json() (${grow ? 'the thread grown by a turn' : 'the thread unchanged'})`,
          `${(r.bytes / MB).toFixed(1)} MB, ${r.messages.toLocaleString('en-US')} messages`,
          ms(r.toolgate.median),
          ms(r.baseline.median),
          x2(r.baseline.median / r.toolgate.median),
          '—',
          null,
        );
        log(`reload (${grow ? 'grown' : 'unchanged'}): ${ms(r.toolgate.median)} vs response.json() ${ms(r.baseline.median)}`);
      }
    }
  } finally {
    await browser?.close();
    stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
  env.loadEnd = loadavg().map((x) => x.toFixed(2)).join(' ');
  env.seconds = Math.round((Date.now() - started) / 1000);

  const main = table(['case', 'size', 'toolgate (median)', 'baseline (median)', 'ratio', 'target', 'met?'], rows);
  let sizeTable = '';
  if (size) {
    sizeTable = table(
      ['bundle', 'raw', 'gzip -9', 'brotli 11 (for information)'],
      [
        ['toolgate wasm (pkg/toolgate_bg.wasm)', kib(size.wasmRaw), kib(size.wasmGzip), kib(size.wasmBrotli)],
        ['toolgate JS glue (pkg/toolgate.js, bundled and minified)', kib(size.glueRaw), kib(size.glueGzip), kib(size.glueBrotli)],
        ['toolgate total', kib(size.wasmRaw + size.glueRaw), kib(size.totalGzip), kib(size.totalBrotli)],
        ...(size.neuron ? [['toolgate/neuron total (pkg/neuron/: the Neuron dialect alone)', kib(size.neuron.raw), kib(size.neuron.gzip), kib(size.neuron.brotli)]] : []),
        [`AI SDK client: ai@${size.aiVersion} AbstractChat + DefaultChatTransport + readUIMessageStream (esbuild ${size.esbuildVersion} --bundle --minify)`, kib(size.aiRaw), kib(size.aiGzip), kib(size.aiBrotli)],
      ],
    );
  }
  const notes = [
    `- Ratio: baseline / toolgate (above 1: toolgate faster or smaller); for turns, toolgate minus baseline.`,
    `- Medians of ${QUICK ? '7 (--quick)' : '7 to 121 (121: turns against the endpoint)'} samples after warm-up, toolgate and baseline interleaved; gc() before each sample: ${results.page?.gc}; timer resolution ${results.page ? +results.page.timerResolutionMs.toFixed(4) : '?'} ms (calls under 20 ms timed in batches). MB = 10^6 bytes, KiB = 1024 bytes.`,
    `- Machine: ${env.cpu}, ${env.cores} cores, ${env.ramGiB} GiB RAM; Chromium ${env.chromium}; Node ${env.node}; rustc ${env.rustc}; ${env.date}; load average ${env.loadStart} at start, ${env.loadEnd} at end; endpoint data in ${env.dataRoot}; ${env.seconds} s.`,
  ];
  const text = [main, '', sizeTable, '', ...notes].join('\n');
  console.log(text);

  if (opt('--json')) writeFileSync(opt('--json'), JSON.stringify(results, null, 2));
  if (flag('--update')) {
    const file = path.join(ROOT, 'BENCHMARKS.md');
    const md = readFileSync(file, 'utf8');
    const begin = '<!-- bench:results:begin -->';
    const end = '<!-- bench:results:end -->';
    const i = md.indexOf(begin);
    const j = md.indexOf(end);
    if (i < 0 || j < i) throw new Error(`BENCHMARKS.md has no ${begin} ... ${end} block`);
    writeFileSync(file, md.slice(0, i + begin.length) + '\n\n' + text + '\n\n' + md.slice(j));
    log('BENCHMARKS.md updated');
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
