/**
 * The web UI's calls to the dashboard: with the signed-in user's key (kept in sessionStorage, sent
 * in the Authorization header), a refusal thrown with the dashboard's own message, and shown above
 * the page. Served as /ui/call.ts, imported by app.ts and the views.
 */

import { byId, obj, str, type Json } from './dom.ts';

/** Where the signed-in key is kept (sessionStorage). */
export const KEY_STORAGE = 'svc-dashboard-key';

/** A call the dashboard refused (or that failed). */
export class CallError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

export function key(): string | null {
  return sessionStorage.getItem(KEY_STORAGE);
}

/** Calls the dashboard with the signed-in key; non-2xx answers throw with the dashboard's message. */
export async function call(method: string, path: string, body?: unknown): Promise<Json> {
  const headers: Record<string, string> = { authorization: key() ?? '' };
  const init: RequestInit = { method, headers };
  if (body !== undefined) {
    headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const r = await fetch(path, init);
  const text = await r.text();
  let parsed: Json = {};
  try {
    parsed = obj(JSON.parse(text));
  } catch {
    // not JSON
  }
  if (!r.ok) throw new CallError(r.status, str(parsed.Message, text || r.statusText));
  return parsed;
}

export function showError(err: unknown): void {
  const box = byId('error');
  box.hidden = false;
  box.textContent =
    err instanceof CallError
      ? `${String(err.status)}: ${err.message}`
      : err instanceof Error
        ? err.message
        : String(err);
}

export function clearError(): void {
  const box = byId('error');
  box.hidden = true;
  box.textContent = '';
}

/**
 * Runs what the user asked for (a form sent, a button pressed): the error above the page cleared
 * first, a failure shown there, then `failed` (a button enabled again, say).
 */
export function attempt(run: () => Promise<unknown>, failed?: () => void): void {
  clearError();
  run().catch((err: unknown) => {
    showError(err);
    failed?.();
  });
}

/** Runs `run` when `form` is sent, instead of the browser's submission, as `attempt` does. */
export function onSubmit(form: HTMLElement, run: () => Promise<unknown>): void {
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    attempt(run);
  });
}
