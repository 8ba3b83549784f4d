/**
 * The token endpoint's time does not tell which client IDs exist: a request naming an unknown
 * client is answered no sooner than one naming a known client with a wrong secret (both verify
 * a scrypt hash; before, an unknown client was answered without one, about 50 ms sooner). The
 * two kinds are interleaved and their medians compared, with a wide margin for a loaded machine.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { useEcho } from '../testing/echo.ts';
import type { InProcessGateway } from '../testing/harness.ts';
import { addOauthClient, startOauthGateway } from './testing.ts';

const echo = useEcho();
let gw: InProcessGateway;

before(async () => {
  gw = await startOauthGateway(echo);
  await addOauthClient(gw, 'known-client');
});
after(async () => {
  await gw.stop();
});

/** How long a token request of `id` with a wrong secret takes to be refused, in ms. */
async function refusedIn(id: string): Promise<number> {
  const t0 = process.hrtime.bigint();
  const r = await gw.request({
    method: 'POST',
    path: '/oa/oauth/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: `grant_type=client_credentials&client_id=${id}&client_secret=wrong-secret`,
  });
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  assert.equal(r.status, 401, r.text);
  return ms;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;

test('an unknown client ID is refused no sooner than a known one with a wrong secret', async () => {
  await refusedIn('known-client');
  await refusedIn('unknown-client-0');
  const known: number[] = [];
  const unknown: number[] = [];
  for (let i = 0; i < 9; i++) {
    known.push(await refusedIn('known-client'));
    unknown.push(await refusedIn(`unknown-client-${String(i + 1)}`));
  }
  const k = median(known);
  const u = median(unknown);
  assert.ok(u >= k / 3, `median refusal: unknown client ${u.toFixed(1)} ms, known client ${k.toFixed(1)} ms`);
});
