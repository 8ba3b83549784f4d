/**
 * What conformance tables share: the four setups they run against (the files store and the
 * Redis store, each with the fast path on and off; `describeEachSetup` starts one redis-server
 * for the file and one gateway per setup, and declares the same suite for each), and the check
 * of one row's answer (`assertAnswer`).
 */
import { after, before, describe } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger } from '../../lib/log.ts';
import { RedisStore } from '../store/redis.ts';
import type { Res } from './client.ts';
import type { Echoed } from './echo.ts';
import { startGateway, type InProcessGateway } from './harness.ts';
import { startRedis, type TestRedis } from './redis-server.ts';

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
  let redis: TestRedis | undefined;
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    await redis?.stop();
  });
  SETUPS.forEach((setup, index) => {
    describe(`${title}: ${setup.name}`, () => {
      let gw: InProcessGateway | undefined;
      before(async () => {
        if (setup.redis && redis === undefined) throw new Error('redis-server did not start');
        const store =
          setup.redis && redis !== undefined
            ? new RedisStore(redis.url, { prefix: `${title}-${String(index)}:`, log: silentLogger() })
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
