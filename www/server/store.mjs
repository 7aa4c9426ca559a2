// Durable storage: one JSON file per thread per dialect, written atomically
// (temporary file, fsync, rename, fsync of the directory), and a per-thread
// promise queue so that requests on one thread never interleave.
import { promises as fsp, appendFileSync, mkdirSync, readFileSync } from 'node:fs';
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
    this.executed = new Set(readExecuted(this.effectsFile));
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

  /**
   * The simulated world: every executed tool call leaves one line here, once. A tool call is
   * executed before its thread record is written, so a server killed in between replays the same
   * decision on the client's retry: the call id is the idempotency key, as it would be for a real
   * side effect, and a call that already ran is not run again (returns false).
   */
  recordEffect(entry) {
    const key = effectKey(entry);
    if (this.executed.has(key)) return false;
    appendFileSync(this.effectsFile, JSON.stringify({ at: new Date().toISOString(), ...entry }) + '\n');
    this.executed.add(key);
    return true;
  }
}

// A Neuron call is known by its message and place as well: several calls can share a callId.
const effectKey = (e) => `${e.dialect}:${e.threadId}:${e.callId}${e.messageId === undefined ? '' : `:${e.messageId}:${e.index}`}`;

/** The keys of the calls effects.jsonl says already ran (a torn last line is ignored). */
function readExecuted(file) {
  let text;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    if (e.code === 'ENOENT') return [];
    throw e;
  }
  // A line torn by a crash is ended, so that the next effect starts on a line of its own.
  if (text !== '' && !text.endsWith('\n')) appendFileSync(file, '\n');
  const keys = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      keys.push(effectKey(JSON.parse(line)));
    } catch {}
  }
  return keys;
}
