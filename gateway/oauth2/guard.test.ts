/**
 * The token endpoint's cost is bounded (guard.ts), through a real gateway and echo upstream:
 * failed client authentications per client IP and client ID are limited (429 with Retry-After,
 * before any scrypt), concurrent scrypt verifications are bounded (503 with Retry-After: 1 beyond
 * them), and a client whose secret was verified is served from the cache, without scrypt, even
 * while the verifications are saturated.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Res } from '../testing/client.ts';
import { useEcho } from '../testing/echo.ts';
import type { InProcessGateway } from '../testing/harness.ts';
import { addOauthClient, startOauthGateway } from './testing.ts';
import { FAILURES_PER_CLIENT, MAX_CONCURRENT_VERIFICATIONS, MAX_QUEUED_VERIFICATIONS } from './guard.ts';

const echo = useEcho();
let gw: InProcessGateway;
const SECRET = 'guard-test-secret-0123456789';

before(async () => {
  gw = await startOauthGateway(echo);
  for (const id of ['limited', 'other', 'cached']) await addOauthClient(gw, id, SECRET);
});
after(async () => {
  await gw.stop();
});

function token(id: string, secret: string): Promise<Res> {
  return gw.request({
    fresh: true,
    method: 'POST',
    path: '/oa/oauth/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: id,
      client_secret: secret,
    }).toString(),
  });
}

test('failed authentications of a client from one address are limited: 429 with Retry-After, then even the right secret waits', async () => {
  for (let i = 0; i < FAILURES_PER_CLIENT; i++) {
    const r = await token('limited', 'wrong-secret-of-the-client');
    assert.equal(r.status, 401, r.text);
  }
  for (const secret of ['wrong-secret-of-the-client', SECRET]) {
    const r = await token('limited', secret);
    assert.equal(r.status, 429, r.text);
    assert.equal((r.json as { error: string }).error, 'temporarily_unavailable');
    const after = Number(r.headers['retry-after']);
    assert.ok(
      Number.isInteger(after) && after >= 1 && after <= 60,
      `Retry-After ${String(r.headers['retry-after'])}`,
    );
  }
  // Another client from the same address is not affected.
  assert.equal((await token('other', SECRET)).status, 200);
});

test('concurrent verifications are bounded (503 with Retry-After: 1 beyond); a verified client is served from the cache meanwhile', async () => {
  assert.equal((await token('cached', SECRET)).status, 200);
  const n = 3 * (MAX_CONCURRENT_VERIFICATIONS + MAX_QUEUED_VERIFICATIONS);
  const flood = Array.from({ length: n }, (_, i) => token(`unknown-${String(i)}`, 'wrong-secret-of-nobody'));
  const cached = await token('cached', SECRET);
  const answers = await Promise.all(flood);
  assert.equal(cached.status, 200, cached.text);
  const statuses = answers.map((r) => r.status);
  assert.ok(
    statuses.every((s) => s === 401 || s === 503),
    `statuses ${statuses.join(',')}`,
  );
  const busy = answers.filter((r) => r.status === 503);
  assert.ok(busy.length > 0, `no 503 among ${statuses.join(',')}`);
  for (const r of busy) {
    assert.equal(r.headers['retry-after'], '1');
    assert.equal((r.json as { error: string }).error, 'temporarily_unavailable');
  }
});
