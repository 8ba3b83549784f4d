/**
 * Runs the chart's Argo CD health check (charts/svc-operator/argocd/health.lua) on an object the
 * way Argo CD does: the object as the global `obj`, the script's returned table read back. The
 * interpreter is Debian's `lua5.4` (.ci/run installs it); Argo CD embeds a Lua 5.1 dialect, so
 * the script keeps to what both read.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';

/** The health check the chart ships. */
export const HEALTH_SCRIPT = join(
  import.meta.dirname,
  '..',
  '..',
  'charts',
  'svc-operator',
  'argocd',
  'health.lua',
);

/** What an Argo CD health check answers. */
export interface Health {
  status: string;
  message: string;
}

/** A Lua string literal of `s`: printable ASCII as is, every other byte as `\ddd`. */
function luaString(s: string): string {
  let out = '"';
  for (const byte of Buffer.from(s, 'utf8')) {
    const c = String.fromCharCode(byte);
    out += byte >= 0x20 && byte < 0x7f && c !== '"' && c !== '\\' ? c : `\\${String(byte).padStart(3, '0')}`;
  }
  return `${out}"`;
}

/** A Lua expression of a JSON value, as Argo CD hands objects to its scripts (null is nil). */
export function luaValue(v: unknown): string {
  if (v === null || v === undefined) return 'nil';
  if (typeof v === 'string') return luaString(v);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return `{${v.map(luaValue).join(', ')}}`;
  const entries = Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== null);
  return `{${entries.map(([k, x]) => `[${luaString(k)}] = ${luaValue(x)}`).join(', ')}}`;
}

/** The health the chart's script gives `obj` (an object as the API server returns it). */
export function argoHealth(obj: unknown): Promise<Health> {
  const program = `obj = ${luaValue(obj)}
local hs = dofile(${luaString(HEALTH_SCRIPT)})
io.write(tostring(hs.status), "\\n", tostring(hs.message or ""))
`;
  return new Promise((resolve, reject) => {
    const child = spawn('lua5.4', ['-'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString('utf8')));
    child.stderr.on('data', (d: Buffer) => (err += d.toString('utf8')));
    child.on('error', (e) => {
      reject(new Error(`lua5.4 did not start (apt-get install lua5.4): ${e.message}`));
    });
    child.on('close', (code) => {
      if (code !== 0) {
        reject(new Error(`the health check failed (exit ${String(code)}): ${err}`));
        return;
      }
      const nl = out.indexOf('\n');
      resolve({ status: out.slice(0, nl), message: out.slice(nl + 1) });
    });
    child.stdin.end(program);
  });
}
