/**
 * Detailed recording (`enable_detailed_recording`) through a real listener, the gateway sending
 * its analytics to a dashboard (`--analytics-dashboard-url`, `--node-secret`), against the files
 * and Redis stores with the fast path on and off: what the dashboard receives. The records of an
 * API that sets it carry the query, the request body and the response body the client got; a
 * body over DETAIL_BODY_LIMIT is cut there and marked, with its whole size; a body without a
 * length streams upstream unread, recorded as cut; the query parameter a key came in is never
 * recorded. The records of an API that does not set it carry no bodies.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import {
  ANALYTICS_COLUMNS_TYPE,
  recordsOfColumns,
  type AnalyticsColumns,
} from '../../../schemas/rules/analytics-batch.ts';
import { DETAIL_BODY_LIMIT } from '../../../schemas/rules/analytics-detail.ts';
import type { AnalyticsDetail } from '../../../schemas/rules/analytics-detail.ts';
import { accessTo } from '../../testing/auth-rows.ts';
import { useEcho, type Echoed } from '../../testing/echo.ts';
import { keyed, keyless } from '../../testing/harness.ts';
import { SETUPS, describeEachSetup, provision } from '../../testing/tables.ts';
import { waitFor } from '../../../lib/testing/wait.ts';
import { closeServer, listenLocal } from '../../testing/servers.ts';

const NODE_SECRET = 'detailed-recording-node-secret';
const echo = useEcho();

/** What the dashboard receives of one request (the fields these tests read). */
interface Received {
  api_id: string;
  method: string;
  status: number;
  detail?: AnalyticsDetail;
}

/** A dashboard that takes analytics batches (`POST /system/analytics` with the node secret). */
interface Dashboard {
  url: string;
  records: Received[];
  server: http.Server;
}

async function startDashboard(): Promise<Dashboard> {
  const records: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/system/analytics') {
        res.writeHead(404).end();
        return;
      }
      if (req.headers['x-svc-node-secret'] !== NODE_SECRET) {
        res.writeHead(403).end();
        return;
      }
      // The gateway sends columns (schemas/rules/analytics-batch.ts), read back into records.
      const body = JSON.parse(Buffer.concat(chunks).toString()) as AnalyticsColumns;
      assert.equal(req.headers['content-type'], ANALYTICS_COLUMNS_TYPE);
      records.push(...recordsOfColumns(body));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
    });
  });
  return { url: await listenLocal(server), records, server };
}

/** One dashboard per setup, so that each suite reads only its own gateway's records. */
const dashboards: Dashboard[] = [];

before(async () => {
  dashboards.push(...(await Promise.all(SETUPS.map(() => startDashboard()))));
});

after(async () => {
  for (const d of dashboards) await closeServer(d.server);
});

/** The record of the next request of `apiId` the dashboard receives from here on. */
async function nextRecord(dashboard: Dashboard, apiId: string, send: () => Promise<void>): Promise<Received> {
  const seen = dashboard.records.length;
  await send();
  return waitFor(
    `the dashboard to receive a record of ${apiId}`,
    () => Promise.resolve(dashboard.records.slice(seen).find((r) => r.api_id === apiId)),
    10_000,
    25,
  );
}

describeEachSetup(
  'detailed recording',
  (index) => ({
    argv: [
      '--analytics-dashboard-url',
      dashboards[index]?.url ?? '',
      '--node-secret',
      NODE_SECRET,
      '--analytics-flush-interval-ms',
      '50',
    ],
  }),
  ({ gw, index }) => {
    const dashboard = (): Dashboard => {
      const d = dashboards[index];
      if (d === undefined) throw new Error('the dashboard did not start');
      return d;
    };

    before(async () => {
      await provision(
        gw(),
        [
          keyless(
            'recorded',
            '/recorded/',
            echo().url,
            { enable_detailed_recording: true },
            { strip_listen_path: true },
          ),
          keyless('plain', '/plain/', echo().url, {}, { strip_listen_path: true }),
          keyed('recorded-keyed', '/recorded-keyed/', echo().url, {
            enable_detailed_recording: true,
            use_standard_auth: true,
            auth: { use_param: true, param_name: 'k' },
            strip_auth_data: true,
          }),
        ],
        { 'key-detailed': { access_rights: accessTo('recorded-keyed') } },
      );
    });

    test('an API that sets it: the record carries the query, the request body and the response body', async () => {
      let answer = '';
      const record = await nextRecord(dashboard(), 'recorded', async () => {
        const res = await gw().request({
          fresh: true,
          method: 'POST',
          path: '/recorded/orders?page=2&sort=asc',
          headers: { 'content-type': 'application/json' },
          body: '{"item":"book","n":1}',
        });
        assert.equal(res.status, 200, res.text);
        assert.equal((res.json as Echoed).body, '{"item":"book","n":1}', 'the upstream got the body');
        answer = res.text;
      });
      assert.equal(record.method, 'POST');
      assert.equal(record.status, 200);
      assert.ok(record.detail !== undefined, 'a detailed record');
      assert.equal(record.detail.query, '?page=2&sort=asc');
      assert.deepEqual(record.detail.request, {
        body: '{"item":"book","n":1}',
        encoding: 'utf8',
        size: 21,
        truncated: false,
      });
      assert.deepEqual(record.detail.response, {
        body: answer,
        encoding: 'utf8',
        size: Buffer.byteLength(answer),
        truncated: false,
      });
    });

    test('a body over the limit is cut at DETAIL_BODY_LIMIT and marked, with its whole size', async () => {
      const big = 'x'.repeat(DETAIL_BODY_LIMIT + 4000);
      const record = await nextRecord(dashboard(), 'recorded', async () => {
        const res = await gw().request({ fresh: true, method: 'PUT', path: '/recorded/big', body: big });
        assert.equal(res.status, 200, res.text);
        assert.equal((res.json as Echoed).body, big, 'the upstream got the whole body');
      });
      assert.ok(record.detail !== undefined, 'a detailed record');
      assert.equal(record.detail.query, '');
      assert.equal(record.detail.request.body, big.slice(0, DETAIL_BODY_LIMIT));
      assert.equal(record.detail.request.size, big.length);
      assert.equal(record.detail.request.truncated, true);
      assert.equal(record.detail.response.body.length, DETAIL_BODY_LIMIT);
      assert.equal(record.detail.response.truncated, true);
      assert.ok(record.detail.response.size > big.length, 'the whole response size');
    });

    test('a body without a length streams upstream unread and is recorded as cut', async () => {
      const record = await nextRecord(dashboard(), 'recorded', async () => {
        const res = await gw().request({
          fresh: true,
          method: 'POST',
          path: '/recorded/chunked',
          chunks: ['part-1;', 'part-2'],
        });
        assert.equal(res.status, 200, res.text);
        assert.equal((res.json as Echoed).body, 'part-1;part-2');
      });
      assert.ok(record.detail !== undefined, 'a detailed record');
      assert.deepEqual(record.detail.request, { body: '', encoding: 'utf8', size: 0, truncated: true });
    });

    test('the query parameter a key came in is not recorded; the others are', async () => {
      const record = await nextRecord(dashboard(), 'recorded-keyed', async () => {
        const res = await gw().request({
          fresh: true,
          method: 'GET',
          path: '/recorded-keyed/x?a=1&k=key-detailed&b=2',
        });
        assert.equal(res.status, 200, res.text);
      });
      assert.ok(record.detail !== undefined, 'a detailed record');
      assert.equal(record.detail.query, '?a=1&b=2');
      assert.ok(!JSON.stringify(record).includes('key-detailed'), 'the key is nowhere in the record');
    });

    test('an API that does not set it: the request is recorded, without bodies', async () => {
      const record = await nextRecord(dashboard(), 'plain', async () => {
        const res = await gw().request({
          fresh: true,
          method: 'POST',
          path: '/plain/orders?page=2',
          body: 'secret-body',
        });
        assert.equal(res.status, 200, res.text);
        assert.equal((res.json as Echoed).body, 'secret-body');
      });
      assert.equal(record.method, 'POST');
      assert.equal(record.status, 200);
      assert.equal(record.detail, undefined);
      assert.ok(!JSON.stringify(record).includes('secret-body'), 'no body in the record');
    });
  },
);
