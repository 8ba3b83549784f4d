/**
 * How a chain runs its steps: synchronous steps, steps that may wait, and handlers around the
 * rest, in order; the first refusal stops it (later steps and the upstream call never run).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RequestContext } from './context.ts';
import { reject, runBefore, runChain } from './compose.ts';
import type { Step } from './middleware.ts';
import { GatewayError } from './errors.ts';

/** The chain functions use the context as an identity only. */
// eslint-disable-next-line @typescript-eslint/no-unsafe-class-instance-assignment
const newCtx = (): RequestContext => ({}) as RequestContext;

function steps(seen: string[]) {
  const all = {
    sync: {
      before: () => {
        seen.push('sync');
        return undefined;
      },
    },
    waitNow: {
      wait: () => {
        seen.push('waitNow');
        return undefined;
      },
    },
    waitLater: {
      wait: () => {
        seen.push('waitLater');
        return new Promise((resolve) => {
          setImmediate(() => {
            resolve(undefined);
          });
        });
      },
    },
    refuseLater: {
      wait: (ctx) => {
        seen.push('refuseLater');
        return Promise.resolve(reject(ctx, GatewayError.rateLimitExceeded()));
      },
    },
    around: async (_ctx, next) => {
      seen.push('around:in');
      await next();
      seen.push('around:out');
      return undefined;
    },
  } satisfies Record<string, Step>;
  return all as { [K in keyof typeof all]: Step };
}

test('runChain: every kind of step in order, then the upstream call, then what follows next()', async () => {
  const seen: string[] = [];
  const s = steps(seen);
  const refused = await runChain([s.sync, s.waitLater, s.around, s.waitNow], newCtx(), () => {
    seen.push('upstream');
    return Promise.resolve();
  });
  assert.equal(refused, undefined);
  assert.deepEqual(seen, ['sync', 'waitLater', 'around:in', 'waitNow', 'upstream', 'around:out']);
});

test('runChain: a waiting step that refuses stops the chain and is the answer', async () => {
  const seen: string[] = [];
  const s = steps(seen);
  const refused = await runChain([s.waitLater, s.refuseLater, s.sync], newCtx(), () => {
    seen.push('upstream');
    return Promise.resolve();
  });
  assert.equal(refused?.rejected.status, 429);
  assert.deepEqual(seen, ['waitLater', 'refuseLater']);
});

test('runBefore: answers at once while no step waits, else a promise of the first refusal', async () => {
  const seen: string[] = [];
  const s = steps(seen);
  assert.equal(runBefore([s.sync, s.waitNow] as never, newCtx()), undefined);
  assert.deepEqual(seen, ['sync', 'waitNow']);
  seen.length = 0;
  const later = runBefore([s.waitLater, s.sync, s.refuseLater, s.waitNow] as never, newCtx());
  assert.ok(later instanceof Promise);
  assert.equal((await later)?.rejected.status, 429);
  assert.deepEqual(seen, ['waitLater', 'sync', 'refuseLater']);
});

test('runBefore: a step that throws makes the run throw, or reject once it waited', async () => {
  const boom: Step = {
    wait: () => {
      throw new Error('boom');
    },
  };
  const s = steps([]);
  assert.throws(() => runBefore([boom] as never, newCtx()), /boom/);
  await assert.rejects(async () => runBefore([s.waitLater, boom] as never, newCtx()), /boom/);
});
