/**
 * A throw-away redis-server for tests: a free port, no persistence, stopped by the test. Never the
 * machine's Redis on 6379.
 */
import { spawn } from 'node:child_process';
import { after, before } from 'node:test';
import { freePort } from '../../lib/testing/wait.ts';

/** A running redis-server. */
export interface TestRedis {
  url: string;
  port: number;
  /** Stops the server and waits for it to exit. */
  stop(): Promise<void>;
}

/** Starts redis-server on a free port and resolves when it accepts connections. */
export async function startRedis(): Promise<TestRedis> {
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    try {
      return await startOn(port);
    } catch (err) {
      lastError = err; // the port was taken meanwhile: try another
    }
  }
  throw new Error('could not start redis-server', { cause: lastError });
}

/**
 * A redis-server for the tests of the enclosing suite (the file, outside any `describe`): started
 * in a `before` hook, stopped in an `after` hook; the getter fails the test if it did not start.
 */
export function useRedis(): () => TestRedis {
  let redis: TestRedis | undefined;
  before(async () => {
    redis = await startRedis();
  });
  after(async () => {
    await redis?.stop();
  });
  return () => {
    if (redis === undefined) throw new Error('redis-server did not start');
    return redis;
  };
}

/** The flags of a gateway storing in `redis` under the key prefix `prefix`, with one worker. */
export function onRedis(redis: TestRedis, prefix: string): string[] {
  return ['--store', redis.url, '--redis-key-prefix', prefix, '--workers', '1'];
}

/** Starts redis-server on a given port (a test that needs Redis to come up late). */
export function startRedisOn(port: number): Promise<TestRedis> {
  return startOn(port);
}

function startOn(port: number): Promise<TestRedis> {
  const child = spawn(
    'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const exited = new Promise<void>((resolve) =>
    child.once('exit', () => {
      resolve();
    }),
  );
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`redis-server on ${port} not ready after 10 s:\n${output}`));
    }, 10_000);
    const onData = (chunk: Buffer): void => {
      output += chunk.toString();
      if (output.includes('Ready to accept connections')) {
        clearTimeout(timer);
        child.stdout.off('data', onData);
        child.stdout.resume();
        resolve({
          url: `redis://127.0.0.1:${port}`,
          port,
          stop: async () => {
            if (child.exitCode === null) child.kill('SIGTERM');
            await exited;
          },
        });
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`redis-server on ${port} exited with ${String(code)}:\n${output}`));
    });
  });
}
