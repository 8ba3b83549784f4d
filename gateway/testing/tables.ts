/**
 * What conformance tables share: the four setups they run against (the files store and the
 * Redis store, each with the fast path on and off; `describeEachSetup` starts one redis-server
 * for the file and one gateway per setup, and declares the same suite for each), the set-up of a
 * suite's gateway (`provision`), sending one row (`sendRow`, counting what the fast path served),
 * the check of one row's answer (`assertAnswer`), a test per row of the common shape
 * (`testRows`, `testProxiedRows`), and a whole table that needs only its APIs and keys
 * (`describeTable`, `describeProxiedTable`).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger } from '../../lib/log.ts';
import { fastPathStats } from '../server/fast-path/index.ts';
import { RedisStore } from '../store/redis.ts';
import type { Res } from './client.ts';
import type { Echoed } from './echo.ts';
import { startGateway, type GatewayClient, type InProcessGateway } from './harness.ts';
import { useRedis } from './redis-server.ts';

/** One setup. */
export interface Setup {
  name: string;
  redis: boolean;
  argv: string[];
}

/** Files and Redis stores, fast path on and off. */
export const SETUPS: readonly Setup[] = [
  { name: 'files store, fast path on', redis: false, argv: [] },
  { name: 'files store, fast path off', redis: false, argv: ['--fast-path=false'] },
  { name: 'redis store, fast path on', redis: true, argv: [] },
  { name: 'redis store, fast path off', redis: true, argv: ['--fast-path=false'] },
];

/** Whether the setup at `index` runs with the fast path on. */
export function fastPathOn(index: number): boolean {
  return !(SETUPS[index]?.argv.includes('--fast-path=false') ?? true);
}

/**
 * A suite's gateway as its rows want it: the APIs stored, the keys created (key id to body; a
 * refused key fails the set-up), then one reload.
 */
export async function provision(
  gw: GatewayClient,
  apis: readonly Record<string, unknown>[],
  keys: Record<string, unknown> = {},
): Promise<void> {
  for (const api of apis) await gw.addApi(api);
  for (const [id, body] of Object.entries(keys)) {
    const key = await gw.admin('POST', `/svc/keys/${id}`, body);
    assert.equal(key.status, 200, key.text);
  }
  await gw.reload();
}

/** The request of a row. */
export interface RowRequest {
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

/**
 * Sends a row's request (GET unless it says) on a new connection, so that one the management
 * calls left to node:http is not reused; `served` is how many requests the fast path served
 * meanwhile (1 or 0).
 */
export async function sendRow(gw: GatewayClient, row: RowRequest): Promise<{ res: Res; served: number }> {
  const before = fastPathStats.requests;
  const res = await gw.request({
    fresh: true,
    method: row.method ?? 'GET',
    path: row.path,
    ...(row.headers === undefined ? {} : { headers: row.headers }),
    ...(row.body === undefined ? {} : { body: row.body }),
  });
  return { res, served: fastPathStats.requests - before };
}

/** What a suite gets: its gateway (once started) and the index of its setup. */
export interface SetupContext {
  gw: () => InProcessGateway;
  index: number;
}

/**
 * Declares `suite` once per setup, as `<title>: <setup>`, each on a gateway of its own started
 * with `options(index)` (extra flags, a clock) before the suite's own hooks run.
 */
export function describeEachSetup(
  title: string,
  options: (index: number) => { argv?: string[]; now?: () => number },
  suite: (ctx: SetupContext) => void,
): void {
  const redis = useRedis();
  SETUPS.forEach((setup, index) => {
    describe(`${title}: ${setup.name}`, () => {
      let gw: InProcessGateway | undefined;
      before(async () => {
        const store = setup.redis
          ? new RedisStore(redis().url, { prefix: `${title}-${String(index)}:`, log: silentLogger() })
          : undefined;
        const { argv = [], now } = options(index);
        gw = await startGateway({
          argv: [...setup.argv, ...argv],
          ...(store === undefined ? {} : { store }),
          ...(now === undefined ? {} : { now }),
        });
      });
      after(async () => {
        await gw?.stop();
      });
      suite({
        gw: () => {
          if (gw === undefined) throw new Error('the gateway did not start');
          return gw;
        },
        index,
      });
    });
  });
}

/** What a row of a table expects of the answer. */
export interface Expected {
  status: number;
  /** The `error` of the JSON body (exactly, or matching). */
  error?: string | RegExp;
  /** Headers the client received; undefined means absent. */
  responseHeaders?: Record<string, string | undefined>;
  /** Headers the echo upstream received (a 200 only); undefined means absent. */
  upstreamHeaders?: Record<string, string | undefined>;
}

/** Checks an answer against a row. */
export function assertAnswer(res: Res, want: Expected): void {
  assert.equal(res.status, want.status, res.text);
  const error = (res.json as { error?: unknown } | undefined)?.error;
  if (want.error instanceof RegExp) assert.match(String(error), want.error);
  else if (want.error !== undefined) assert.deepEqual(res.json, { error: want.error });
  for (const [name, value] of Object.entries(want.responseHeaders ?? {})) {
    assert.equal(res.headers[name], value, `response header ${name}`);
  }
  for (const [name, value] of Object.entries(want.upstreamHeaders ?? {})) {
    assert.equal((res.json as Echoed).headers[name], value, `upstream header ${name}`);
  }
}

/** A row of the common shape: a request, what the answer must be, and its entrance. */
export interface Row extends Expected, RowRequest {
  name: string;
  /** The exact body the client got. */
  text?: string;
  /** The method the echo upstream received (proxied rows). */
  upstreamMethod?: string;
  /** Served by node:http even with the fast path on (the route reads bodies). */
  nodeHttp?: boolean;
}

/**
 * Declares a test per row (`<name>: <status>`), in order: `beforeRow` (moving a clock), the
 * request (`sendRow`), the answer (`assertAnswer`, the exact text and the upstream's method where
 * the row says), and the entrance that served it: the fast path when `fastPath` is on, unless the
 * row is `nodeHttp`.
 */
export function testRows<R extends Row>(
  gw: () => GatewayClient,
  rows: readonly R[],
  fastPath: boolean,
  beforeRow?: (row: R) => void,
): void {
  for (const row of rows) {
    test(`${row.name}: ${String(row.status)}`, async () => {
      beforeRow?.(row);
      const { res, served } = await sendRow(gw(), row);
      assertAnswer(res, row);
      if (row.text !== undefined) assert.equal(res.text, row.text);
      if (row.upstreamMethod !== undefined) assert.equal((res.json as Echoed).method, row.upstreamMethod);
      assert.equal(served, fastPath && row.nodeHttp !== true ? 1 : 0, 'the entrance that served it');
    });
  }
}

/** A row whose 200 says which upstream answered and what it received. */
export interface ProxiedRow extends Expected, RowRequest {
  name: string;
  /** Which upstream answered (a 200 only; default `echo`). */
  upstream?: string;
  /** The path, query and method the upstream received (a 200 only). */
  upstreamPath?: string;
  upstreamQuery?: string;
  upstreamMethod?: string;
}

/**
 * Declares a test per row (`<name>: <status>`): the request (`sendRow`), the answer
 * (`assertAnswer`), on a 200 the upstream that answered and what it received, and the entrance:
 * every row is served by the fast path when it is on.
 */
export function testProxiedRows(
  gw: () => GatewayClient,
  rows: readonly ProxiedRow[],
  fastPath: boolean,
): void {
  for (const row of rows) {
    test(`${row.name}: ${String(row.status)}`, async () => {
      const { res, served } = await sendRow(gw(), row);
      assertAnswer(res, row);
      if (row.status === 200) {
        const got = res.json as Echoed;
        assert.equal(got.upstream, row.upstream ?? 'echo', 'upstream');
        if (row.upstreamPath !== undefined) assert.equal(got.path, row.upstreamPath);
        if (row.upstreamQuery !== undefined) assert.equal(got.query, row.upstreamQuery);
        if (row.upstreamMethod !== undefined) assert.equal(got.method, row.upstreamMethod);
      }
      assert.equal(served, fastPath ? 1 : 0, fastPath ? 'served by the fast path' : 'served by node:http');
    });
  }
}

/**
 * Per setup (`describeEachSetup`): the APIs and keys provisioned (`provision`), then the tests
 * `rowsOf` declares, given the gateway and whether the setup's fast path is on.
 */
export function describeProvisioned(
  title: string,
  apis: () => readonly Record<string, unknown>[],
  keys: Record<string, unknown>,
  rowsOf: (gw: () => GatewayClient, fastPath: boolean) => void,
): void {
  describeEachSetup(
    title,
    () => ({}),
    ({ gw, index }) => {
      before(async () => {
        await provision(gw(), apis(), keys);
      });
      rowsOf(gw, fastPathOn(index));
    },
  );
}

/**
 * A whole table whose rows need only APIs and keys: per setup (`describeEachSetup`), the APIs and
 * keys provisioned, then a test per row (`testRows`).
 */
export function describeTable(
  title: string,
  apis: () => readonly Record<string, unknown>[],
  rows: readonly Row[],
  keys: Record<string, unknown> = {},
): void {
  describeProvisioned(title, apis, keys, (gw, fastPath) => {
    testRows(gw, rows, fastPath);
  });
}

/** {@link describeTable} for proxied rows (`testProxiedRows`): every row served by the fast path when on. */
export function describeProxiedTable(
  title: string,
  apis: () => readonly Record<string, unknown>[],
  rows: readonly ProxiedRow[],
  keys: Record<string, unknown> = {},
): void {
  describeProvisioned(title, apis, keys, (gw, fastPath) => {
    testProxiedRows(gw, rows, fastPath);
  });
}

/** A case of {@link testAnswers}: a GET with headers, and the answer it must get. */
export interface AnswerCase extends Expected {
  name: string;
  path: string;
  headers?: Record<string, string>;
}

/**
 * Declares a test per case (named as it is): its GET on the gateway's usual connection and the
 * answer checked (`assertAnswer`), whichever entrance served it.
 */
export function testAnswers(gw: () => GatewayClient, cases: readonly AnswerCase[]): void {
  for (const c of cases) {
    test(c.name, async () => {
      const res = await gw().request({
        path: c.path,
        ...(c.headers === undefined ? {} : { headers: c.headers }),
      });
      assertAnswer(res, c);
    });
  }
}
