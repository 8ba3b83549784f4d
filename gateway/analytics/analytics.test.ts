/**
 * A gateway's analytics on the wire, against dashboards of HTTP tests: a dashboard older than
 * the columns format (that refuses it) gets the same records in the records format; a batch goes
 * when it is full, and what comes in meanwhile waits for the next full batch or the interval, not
 * sent in batches of a few records. Against a real dashboard: e2e/contract/analytics-wire.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { Registry } from 'prom-client';
import { waitFor } from '../../lib/testing/wait.ts';
import {
  ANALYTICS_COLUMNS_TYPE,
  recordsOfColumns,
  type AnalyticsColumns,
} from '../../schemas/rules/analytics-batch.ts';
import type { AnalyticsRecord } from '../../schemas/rules/analytics.ts';
import { BATCH_SIZE, MAX_BATCH_SIZE } from './analytics.ts';
import { analyticsRoute as route, analyticsTo, counted, keyedRequest as request } from './testing.ts';
import { closeServer, listenLocal } from '../testing/servers.ts';

/**
 * A dashboard that answers each batch `answer(contentType)` (once `hold` has resolved) and keeps
 * what it took.
 */
async function fakeDashboard(
  answer: (contentType: string) => number,
  hold: Promise<void> = Promise.resolve(),
): Promise<{
  url: string;
  batches: { type: string; records: AnalyticsRecord[] }[];
  close: () => Promise<void>;
}> {
  const batches: { type: string; records: AnalyticsRecord[] }[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void hold.then(() => {
        const type = req.headers['content-type'] ?? '';
        const status = answer(type);
        if (status === 200) {
          const body = JSON.parse(Buffer.concat(chunks).toString()) as Record<string, unknown>;
          const records =
            type === ANALYTICS_COLUMNS_TYPE
              ? recordsOfColumns(body as unknown as AnalyticsColumns)
              : (body.records as AnalyticsRecord[]);
          batches.push({ type, records });
        }
        res.writeHead(status, { 'content-type': 'application/json' }).end('{"Status":"Error"}');
      });
    });
  });
  return {
    url: await listenLocal(server),
    batches,
    close: () => closeServer(server),
  };
}

test('a dashboard that refuses columns (one older than them) gets the same records as records', async () => {
  const old = await fakeDashboard((type) => (type === 'application/json' ? 200 : 400));
  try {
    const registry = new Registry();
    const a = analyticsTo(old.url, registry);
    for (let i = 0; i < BATCH_SIZE + 5; i++)
      a.onResponse(request(route('acme'), `/shop/x${String(i)}`, 'k1'), 200);
    await a.close();
    assert.deepEqual(
      old.batches.map((b) => [b.type, b.records.length]),
      [
        ['application/json', BATCH_SIZE],
        ['application/json', 5],
      ],
    );
    assert.equal(old.batches[1]?.records[4]?.path, `/shop/x${String(BATCH_SIZE + 4)}`);
    assert.equal(await counted(registry, 'sent'), BATCH_SIZE + 5);
  } finally {
    await old.close();
  }
});

test('a full batch goes at once; what comes in meanwhile waits for a full batch or the interval', async () => {
  const d = await fakeDashboard(() => 200);
  try {
    const a = analyticsTo(d.url);
    for (let i = 0; i < BATCH_SIZE + 10; i++) a.onResponse(request(route('acme'), '/shop/x', 'k1'), 200);
    await waitFor('the full batch', () => (d.batches.length >= 1 ? true : undefined));
    await new Promise((r) => setTimeout(r, 100));
    assert.equal(d.batches.length, 1, 'the 10 left are not sent on their own');
    assert.equal(a.buffered, 10);
    await a.close();
    assert.deepEqual(
      d.batches.map((b) => [b.type, b.records.length]),
      [
        [ANALYTICS_COLUMNS_TYPE, BATCH_SIZE],
        [ANALYTICS_COLUMNS_TYPE, 10],
      ],
    );
  } finally {
    await d.close();
  }
});

test('records that pile up while a batch is on its way go in batches of up to MAX_BATCH_SIZE', async () => {
  let release = (): void => undefined;
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const d = await fakeDashboard(() => 200, held);
  try {
    const a = analyticsTo(d.url);
    const push = (n: number): void => {
      for (let i = 0; i < n; i++) a.onResponse(request(route('acme'), '/shop/x', 'k1'), 200);
    };
    push(BATCH_SIZE);
    push(MAX_BATCH_SIZE + BATCH_SIZE);
    assert.equal(a.buffered, MAX_BATCH_SIZE + BATCH_SIZE, 'the first batch is on its way');
    release();
    await waitFor('the backlog', () => (a.buffered === 0 ? true : undefined));
    await a.close();
    assert.deepEqual(
      d.batches.map((b) => b.records.length),
      [BATCH_SIZE, MAX_BATCH_SIZE, BATCH_SIZE],
    );
  } finally {
    await d.close();
  }
});
