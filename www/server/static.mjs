// Static files: the demo (www/) at / and the built package (pkg/) at /pkg/.
import { promises as fsp } from 'node:fs';
import path from 'node:path';

export const CSP =
  "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'";

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.htm': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.wasm': 'application/wasm',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.ts': 'text/plain; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.md': 'text/plain; charset=utf-8',
};

export function contentType(file) {
  return TYPES[path.extname(file).toLowerCase()] || 'application/octet-stream';
}

const within = (root, p) => p === root || p.startsWith(root + path.sep);

/**
 * Resolve a raw request path to a file, or { status } for a refusal.
 * opts: { wwwDir, pkgDir, deny: [absolute dirs never served] }
 */
export async function resolveStatic(rawPath, opts) {
  let decoded;
  try {
    decoded = decodeURIComponent(rawPath);
  } catch {
    return { status: 400 };
  }
  if (decoded.includes('\0') || decoded.includes('\\')) return { status: 400 };
  const segments = decoded.split('/').slice(1);
  if (segments.some((s) => s === '..' || s === '.')) return { status: 400 };
  if (segments.some((s) => s.startsWith('.') && s !== '')) return { status: 404 };
  let root;
  let rel;
  if (segments[0] === 'pkg') {
    root = opts.pkgDir;
    rel = segments.slice(1);
  } else {
    root = opts.wwwDir;
    rel = segments;
  }
  if (rel.length === 0 || rel[rel.length - 1] === '') rel = [...rel.filter(Boolean), 'index.html'];
  rel = rel.filter(Boolean);
  let rootReal;
  try {
    rootReal = await fsp.realpath(root);
  } catch {
    return { status: 404 };
  }
  let file = path.join(rootReal, ...rel);
  if (!within(rootReal, file)) return { status: 400 };
  let real;
  try {
    real = await fsp.realpath(file);
    let st = await fsp.stat(real);
    if (st.isDirectory()) {
      real = await fsp.realpath(path.join(real, 'index.html'));
      st = await fsp.stat(real);
    }
    if (!st.isFile()) return { status: 404 };
  } catch {
    return { status: 404 };
  }
  if (!within(rootReal, real)) return { status: 404 };
  for (const d of opts.deny || []) {
    let dr;
    try {
      dr = await fsp.realpath(d);
    } catch {
      continue;
    }
    if (within(dr, real)) return { status: 404 };
  }
  return { file: real };
}

export async function serveStatic(req, res, rawPath, opts) {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' });
    res.end('Method Not Allowed\n');
    return;
  }
  const r = await resolveStatic(rawPath, opts);
  const base = { 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer' };
  if (!r.file) {
    const msg = r.status === 400 ? 'Bad Request\n' : 'Not Found\n';
    res.writeHead(r.status, { ...base, 'content-type': 'text/plain; charset=utf-8' });
    res.end(req.method === 'HEAD' ? undefined : msg);
    return;
  }
  const body = await fsp.readFile(r.file);
  const type = contentType(r.file);
  const headers = { ...base, 'content-type': type, 'content-length': body.length, 'cache-control': 'no-cache' };
  if (type.startsWith('text/html')) headers['content-security-policy'] = CSP;
  res.writeHead(200, headers);
  res.end(req.method === 'HEAD' ? undefined : body);
}
