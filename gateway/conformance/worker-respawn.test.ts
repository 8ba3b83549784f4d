/**
 * A worker of `--workers 2` killed (SIGKILL) under a stream of requests: the primary starts
 * another, which must load its routes before it takes connections. A request may fail with a
 * connection error (one the killed worker held), never with 404 from a worker without routes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { get } from 'node:http';
import { useEcho } from '../testing/echo.ts';
import { allWorkersServing, keyless, spawnGateway } from '../testing/harness.ts';
import { waitFor } from '../../lib/testing/wait.ts';

const echo = useEcho();
/** APIs on disk: enough that loading them takes a while, so a worker serving early is seen. */
const APIS = 400;

/** A GET on a fresh connection: its status, or the connection error that ended it. */
function status(port: number, path: string): Promise<number | string> {
  return new Promise((resolve) => {
    const req = get({ host: '127.0.0.1', port, path, agent: false, timeout: 10_000 }, (res) => {
      res.resume();
      res.on('end', () => {
        resolve(res.statusCode ?? 0);
      });
      res.on('close', () => {
        resolve(res.complete ? (res.statusCode ?? 0) : 'response cut');
      });
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (err: NodeJS.ErrnoException) => {
      resolve(err.code ?? err.message);
    });
  });
}

const pidsListening = (stderr: string): string[] => [
  ...new Set([...stderr.matchAll(/"message":"listening","pid":(\d+)/g)].map((m) => m[1] ?? '')),
];

test(
  '--workers 2: a worker killed under load is replaced by one that never answers 404',
  { timeout: 120_000 },
  async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'svc-gw-respawn-'));
    mkdirSync(join(dataDir, 'apis'));
    for (let i = 0; i < APIS; i++) {
      const id = `a${String(i)}`;
      writeFileSync(join(dataDir, 'apis', `${id}.json`), JSON.stringify(keyless(id, `/${id}/`, echo().url)));
    }
    const gw = await spawnGateway(['--workers', '2', '--data-dir', dataDir]);
    try {
      await allWorkersServing(gw);
      const [victim] = pidsListening(gw.stderr());
      assert.ok(victim !== undefined);

      const statuses = new Map<number | string, number>();
      let running = true;
      const loop = async (): Promise<void> => {
        while (running) {
          const key = await status(gw.port, `/a${String(APIS - 1)}/x`);
          statuses.set(key, (statuses.get(key) ?? 0) + 1);
        }
      };
      const loops = Array.from({ length: 4 }, () => loop());
      await waitFor('requests served', () => ((statuses.get(200) ?? 0) >= 20 ? true : undefined));

      process.kill(Number(victim), 'SIGKILL');
      // The replacement listens, then serves a good number of requests of the stream.
      const first = pidsListening(gw.stderr());
      const replacement = await waitFor('a replacement worker listening', () =>
        pidsListening(gw.stderr()).find((p) => !first.includes(p)),
      );
      process.stderr.write(`killed ${victim}, replaced by ${replacement}\n`);
      const after = statuses.get(200) ?? 0;
      await waitFor('requests served after the replacement', () =>
        (statuses.get(200) ?? 0) >= after + 200 ? true : undefined,
      );
      running = false;
      await Promise.all(loops);

      const seen = Object.fromEntries(statuses);
      assert.equal(
        statuses.get(404),
        undefined,
        `no 404 while a worker was replaced: ${JSON.stringify(seen)}`,
      );
      for (const key of statuses.keys())
        assert.ok(
          key === 200 || typeof key === 'string',
          `only 200 or connection errors: ${JSON.stringify(seen)}`,
        );
    } finally {
      await gw.stop();
    }
  },
);
