// Exposes the bench cases to the harness (bench/run.mjs): window.bench.<case>(...).
import * as bench from './bench.js';

window.bench = bench;
window.benchReady = bench.setup();
