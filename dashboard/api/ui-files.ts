/**
 * The files of the web UIs (`dashboard/ui/`: the dashboard's, api/ui.ts, and the developer
 * portal's, portal/serve.ts), read once per process (the UI does not change under a running
 * dashboard), TypeScript served as an ES module after Node's type stripping, and the security
 * headers they are served with: their own origin only, no framing.
 */
import { readFile } from 'node:fs/promises';
import { stripTypeScriptTypes } from 'node:module';

const UI_DIR = new URL('../ui/', import.meta.url);

/** A file served: its source file under dashboard/ui/, content type, and whether it is TypeScript. */
export interface UiFile {
  file: string;
  type: string;
  ts?: boolean;
}

/** The UIs' security headers. */
export const UI_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-cache',
};

const cache = new Map<string, Promise<string>>();

/** The text of a UI file as served (types stripped from TypeScript), read once per process. */
export function loadUiFile(entry: UiFile): Promise<string> {
  let p = cache.get(entry.file);
  if (p === undefined) {
    p = readFile(new URL(entry.file, UI_DIR), 'utf8').then((text) =>
      entry.ts === true ? stripTypeScriptTypes(text, { mode: 'strip' }) : text,
    );
    cache.set(entry.file, p);
    p.catch(() => cache.delete(entry.file));
  }
  return p;
}
