// Durable storage: one JSON file per thread per dialect, written atomically
// (temporary file, fsync, rename, fsync of the directory), and a per-thread
// promise queue so that requests on one thread never interleave.
import { promises as fsp, appendFileSync, mkdirSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';

export const THREAD_ID = /^[A-Za-z0-9_-]{1,128}$/;

export function validThreadId(id) {
  return typeof id === 'string' && THREAD_ID.test(id);
}

export class Store {
  constructor(dataDir) {
    this.dataDir = path.resolve(dataDir);
    this.queues = new Map();
    for (const d of ['neuron', 'sidenet']) mkdirSync(path.join(this.dataDir, d), { recursive: true });
    this.effectsFile = path.join(this.dataDir, 'effects.jsonl');
  }

  file(dialect, id) {
    if (!validThreadId(id)) throw new Error(`invalid thread id: ${id}`);
    if (dialect !== 'neuron' && dialect !== 'sidenet') throw new Error(`invalid dialect: ${dialect}`);
    const f = path.join(this.dataDir, dialect, `${id}.json`);
    // Belt and braces: the regex already forbids separators and dots.
    if (path.dirname(f) !== path.join(this.dataDir, dialect)) throw new Error('path escape');
    return f;
  }

  async read(dialect, id) {
    try {
      return JSON.parse(await fsp.readFile(this.file(dialect, id), 'utf8'));
    } catch (e) {
      if (e.code === 'ENOENT') return null;
      throw e;
    }
  }

  async write(dialect, id, record) {
    const target = this.file(dialect, id);
    const dir = path.dirname(target);
    const tmp = path.join(dir, `.${id}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
    const fh = await fsp.open(tmp, 'w', 0o600);
    try {
      await fh.writeFile(JSON.stringify(record, null, 2) + '\n');
      await fh.sync();
    } finally {
      await fh.close();
    }
    try {
      await fsp.rename(tmp, target);
    } catch (e) {
      await fsp.rm(tmp, { force: true });
      throw e;
    }
    let dh;
    try {
      dh = await fsp.open(dir, 'r');
      await dh.sync();
    } catch {
      // some filesystems refuse fsync on directories; the rename is still atomic
    } finally {
      await dh?.close();
    }
  }

  /** Run fn with exclusive access to one thread; calls queue in arrival order. */
  lock(key, fn) {
    const prev = this.queues.get(key) || Promise.resolve();
    const next = prev.then(() => fn());
    const tail = next.catch(() => {});
    this.queues.set(key, tail);
    tail.then(() => {
      if (this.queues.get(key) === tail) this.queues.delete(key);
    });
    return next;
  }

  /** The simulated world: every executed tool call leaves one line here. */
  recordEffect(entry) {
    appendFileSync(this.effectsFile, JSON.stringify({ at: new Date().toISOString(), ...entry }) + '\n');
  }
}
