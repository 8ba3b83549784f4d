import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { InputError, SvcError, TransientError } from '../../lib/errors.ts';
import { GatewayClient, ReloadBatcher } from './gateway.ts';

test('reload requests close together share one reload; later ones get the next', async () => {
  let runs = 0;
  let release = (): void => undefined;
  const b = new ReloadBatcher(
    async () => {
      runs++;
      if (runs === 1) await new Promise<void>((r) => (release = r));
    },
    5,
    50,
  );
  const first = [b.request(), b.request(), b.request()];
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(runs, 1, 'one reload for the burst');
  const second = [b.request(), b.request()];
  release();
  await Promise.all(first);
  await Promise.all(second);
  assert.equal(runs, 2, 'requests made during a reload get a reload of their own');
});

test('a request after as long without a reload as the last one took reloads at once; a burst behind it waits for its quiet time', async () => {
  const started: number[] = [];
  const b = new ReloadBatcher(
    async () => {
      started.push(Date.now());
      await new Promise((r) => setTimeout(r, 100));
    },
    1_000,
    5_000,
  );
  const t0 = Date.now();
  await Promise.all([b.request(), b.request()]);
  assert.equal(started.length, 1, 'the requests of one moment share the reload');
  assert.ok(
    (started[0] ?? Infinity) - t0 < 500,
    `started ${String((started[0] ?? NaN) - t0)} ms after the request`,
  );
  // Right after it: a burst, which waits for its quiet time.
  const t1 = Date.now();
  await b.request();
  assert.equal(started.length, 2);
  assert.ok(
    (started[1] ?? 0) - t1 >= 950,
    `started ${String((started[1] ?? NaN) - t1)} ms after the request`,
  );
  // After as long as the last reload took (100 ms), though within the quiet time: at once.
  await new Promise((r) => setTimeout(r, 300));
  const t3 = Date.now();
  await b.request();
  assert.equal(started.length, 3);
  assert.ok(
    (started[2] ?? Infinity) - t3 < 500,
    `started ${String((started[2] ?? NaN) - t3)} ms after the request`,
  );
  // Quiet again: at once.
  await new Promise((r) => setTimeout(r, 1_100));
  const t2 = Date.now();
  await b.request();
  assert.ok(
    (started[3] ?? Infinity) - t2 < 500,
    `started ${String((started[3] ?? NaN) - t2)} ms after the request`,
  );
});

test('a failed reload rejects every request of its batch', async () => {
  const b = new ReloadBatcher(() => Promise.reject(new Error('down')), 1, 10);
  const results = await Promise.allSettled([b.request(), b.request()]);
  assert.deepEqual(
    results.map((r) => r.status),
    ['rejected', 'rejected'],
  );
});

// A real HTTP peer that answers each path with a fixed status, to check how the client reads them.
const answers: Record<string, [number, unknown]> = {
  '/svc/apis/ok': [200, { api_id: 'ok', name: 'ok' }],
  '/svc/apis/missing': [404, { status: 'error', message: 'API not found' }],
  '/svc/apis/bad': [400, { status: 'error', message: 'Validation of API Definition failed. Reason: x' }],
  '/svc/apis/denied': [
    403,
    { status: 'error', message: 'Attempted administrative access with invalid or missing key!' },
  ],
  '/svc/apis/busy': [503, { status: 'error', message: 'store down' }],
  '/svc/policies/gold': [200, { id: 'gold', name: 'Gold' }],
  '/svc/policies/gone': [404, { status: 'error', message: 'Policy not found' }],
};
const seenAuth: string[] = [];
const server = http.createServer((req, res) => {
  seenAuth.push(String(req.headers['x-svc-authorization']));
  const [status, body] = answers[req.url ?? ''] ?? [404, {}];
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
const client = new GatewayClient({ mode: 'ce', url, auth: 'sekret', org: 'o', insecureSkipVerify: false });
after(async () => {
  await client.close();
  server.close();
});

test('client: reads an API, sends the secret header, maps 404 to undefined', async () => {
  assert.deepEqual(await client.getApi('ok'), { api_id: 'ok', name: 'ok' });
  assert.equal(await client.getApi('missing'), undefined);
  assert.equal(await client.deleteApi('missing'), false);
  assert.ok(seenAuth.every((a) => a === 'sekret'));
});

test('client: policies are read and deleted under /svc/policies, 404 meaning none', async () => {
  assert.deepEqual(await client.getPolicy('gold'), { id: 'gold', name: 'Gold' });
  assert.equal(await client.getPolicy('gone'), undefined);
  assert.equal(await client.deletePolicy('gone'), false);
  assert.equal(await client.deletePolicy('gold'), true);
});

test('client: failures are typed so the reconciler knows whether to retry', async () => {
  await assert.rejects(
    client.getApi('bad'),
    (e) => e instanceof InputError && e.message.includes('Validation of API Definition failed'),
  );
  await assert.rejects(client.getApi('denied'), (e) => e instanceof SvcError && e.status === 403);
  await assert.rejects(
    client.getApi('busy'),
    (e) => e instanceof TransientError && e.message.includes('503 store down'),
  );
  const dead = new GatewayClient({
    mode: 'ce',
    url: 'http://127.0.0.1:1',
    auth: 'x',
    org: 'o',
    insecureSkipVerify: false,
  });
  await assert.rejects(
    dead.getApi('x'),
    (e) => e instanceof TransientError && e.message.includes('unreachable'),
  );
  await dead.close();
});
