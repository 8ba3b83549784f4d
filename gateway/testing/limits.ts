/**
 * What the limit tests share (middleware/rate-limit, quota, org-quota, endpoint-limits,
 * api-rate-limit, and the suites of conformance/ about several limits): an access right, a keyed
 * request and the statuses of a run of them, a key written through the management API, and a
 * gateway whose clock and counters read a time the test moves.
 */
import { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { MemoryCounters } from '../limits/memory.ts';
import { startGateway, type GatewayClient, type InProcessGateway } from './harness.ts';
import { provision } from './tables.ts';

/** Access to API `id` (its one version is `Default`), with `extra` (a `limit`, `endpoints`...). */
export const right = (id: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  [id]: { api_id: id, versions: ['Default'], ...extra },
});

/** Access to each API named (its one version is `Default`). */
export const rights = (...ids: string[]): Record<string, unknown> =>
  Object.fromEntries(ids.map((id) => [id, { api_id: id, versions: ['Default'] }]));

/** A request with `key` in `Authorization`: its status, its `error` if any, its headers. */
export async function call(
  gw: GatewayClient,
  path: string,
  key: string,
  method = 'GET',
): Promise<{ status: number; error?: string; headers: Record<string, unknown> }> {
  const res = await gw.request({ path, method, headers: { authorization: key } });
  const error = (res.json as { error?: string } | undefined)?.error;
  return { status: res.status, headers: res.headers, ...(error === undefined ? {} : { error }) };
}

/** The statuses of `n` requests in a row with `key`. */
export async function statuses(gw: GatewayClient, path: string, key: string, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await call(gw, path, key)).status);
  return out;
}

/** Writes key `key` (`POST /svc/keys/{key}`), failing the test unless it was stored. */
export async function addKey(gw: GatewayClient, key: string, body: Record<string, unknown>): Promise<void> {
  const res = await gw.admin('POST', `/svc/keys/${key}`, body);
  assert.equal(res.status, 200, res.text);
}

/**
 * The suite's gateway (in this process, started in a before hook, stopped in an after hook) whose
 * clock and in-memory counters read `clock` (long windows and quota periods pass without
 * waiting), with `apis()` stored and reloaded; the getter fails the test if it did not start.
 */
export function useClockedGateway(
  clock: () => number,
  apis: () => readonly Record<string, unknown>[],
): () => InProcessGateway {
  let gw: InProcessGateway | undefined;
  before(async () => {
    gw = await startGateway({ now: clock, counters: new MemoryCounters({ now: clock }) });
    await provision(gw, apis());
  });
  after(async () => {
    await gw?.stop();
  });
  return () => {
    if (gw === undefined) throw new Error('the gateway on an injected clock did not start');
    return gw;
  };
}
