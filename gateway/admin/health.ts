/** `/hello` (liveness and store health) and `/ready` (routes loaded). */
import { statusBody, type AdminResponse } from './http.ts';
import type { AdminRequest } from './types.ts';

/**
 * GET /hello: 200 while the process serves. A store that doesn't answer turns the status to
 * `warn` rather than failing the probe: restarting the gateway would not bring Redis back, and
 * the loaded routes keep serving.
 */
export async function hello(r: AdminRequest): Promise<AdminResponse> {
  const h = await r.deps.store.health();
  return {
    status: 200,
    body: {
      status: h.ok ? 'pass' : 'warn',
      version: r.deps.version,
      description: 'svc gateway',
      details: {
        store: {
          kind: r.deps.store.kind,
          status: h.ok ? 'pass' : 'fail',
          ...(h.message === undefined ? {} : { output: h.message }),
        },
      },
    },
  };
}

/** GET /ready: 503 until the first successful load of the routes. */
export function ready(r: AdminRequest): Promise<AdminResponse> {
  return Promise.resolve(
    r.deps.isReady()
      ? statusBody(200, 'ok', 'ready')
      : statusBody(503, 'error', `not ready: ${r.deps.notReady?.() ?? 'the routes have not loaded yet'}`),
  );
}
