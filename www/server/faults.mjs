// Fault injection for client tests. Off unless FAULTS is set, e.g.
//   FAULTS=drop:0.1,error:0.05,delay:200,seed:7
// drop:p  — probability of destroying the connection (before or after the
//           request is applied; streams may be cut mid-way)
// error:p — probability of answering 500 (before or after applying)
// delay:ms — every API request waits a random 0..ms first
// seed:n  — deterministic PRNG (mulberry32)

export function parseFaults(spec) {
  if (spec === undefined || spec === null || String(spec).trim() === '' || spec === '0' || spec === 'off') return null;
  const cfg = { drop: 0, error: 0, delay: 0, seed: null };
  for (const item of String(spec).split(',')) {
    const s = item.trim();
    if (!s) continue;
    const m = /^(drop|error|delay|seed):\s*([0-9]*\.?[0-9]+)$/.exec(s);
    if (!m) throw new Error(`FAULTS: cannot parse ${JSON.stringify(s)} (expected drop:p,error:p,delay:ms,seed:n)`);
    const v = Number(m[2]);
    if ((m[1] === 'drop' || m[1] === 'error') && (v < 0 || v > 1)) throw new Error(`FAULTS: ${m[1]} must be a probability in [0, 1]`);
    cfg[m[1]] = v;
  }
  return cfg;
}

function mulberry32(a) {
  return function () {
    a |= 0;
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class Faults {
  constructor(cfg) {
    this.cfg = cfg;
    this.rand = cfg.seed === null ? Math.random : mulberry32(cfg.seed);
    this.counts = { drops: 0, errors: 0, delays: 0 };
  }

  /**
   * Decide the fate of one request:
   * { delayMs, kind: null | 'drop' | 'error', when: 'before' | 'after', cut: fraction of a stream to send }
   */
  decide() {
    const r = this.rand;
    const delayMs = this.cfg.delay > 0 ? Math.floor(r() * this.cfg.delay) : 0;
    const x = r();
    let kind = null;
    if (x < this.cfg.drop) kind = 'drop';
    else if (x < this.cfg.drop + this.cfg.error) kind = 'error';
    const when = r() < 0.5 ? 'before' : 'after';
    const cut = r();
    return { delayMs, kind, when, cut };
  }
}
