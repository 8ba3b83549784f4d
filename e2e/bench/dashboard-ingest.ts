/**
 * The dashboard's cost per analytics record (issue 34 item 5), in one process: batches of
 * columns as a gateway sends them (`AnalyticsColumnsWriter`, 1000 records of one API and key,
 * time moving on 0.2 ms a record as at 5,000 requests/s; of one endpoint, all 200, as in the
 * protected case of the gateway's bench, or `--endpoints 4`: four endpoints taking turns, a 429
 * (rate limit) in 97 and a 500 in 53), each
 * parsed from its JSON text (`JSON.parse` and the nesting check, as `readJsonObject` does) and
 * taken by `ingest` (read, rolled up, added to the store: one SQL transaction) one after the
 * other. Prints the CPU time (user and system, of this process) and the wall time per record,
 * medians of rounds, and the share of the parse.
 *
 * `node e2e/bench/dashboard-ingest.ts [--batches N] [--rounds R] [--size S] [--endpoints 1..4] [--postgres] [--http]`
 * (defaults 200 batches, 5 rounds, 1000 records; SQLite in a temporary directory, or a
 * PostgreSQL server of its own with `--postgres`). Add `--cpu-prof` before the script to see
 * where the time goes. With `--http`, the whole path instead: a dashboard process
 * (`dashboard/main.ts`, SQLite) takes the batches on `POST /system/analytics` (one kept-alive
 * connection, one batch after the other), and its CPU time is read from `/proc` (as the gateway
 * bench reads it).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { freePort, waitFor } from '../../lib/testing/wait.ts';
import { tooDeep } from '../../schemas/rules/nesting.ts';
import { ANALYTICS_COLUMNS_TYPE, AnalyticsColumnsWriter } from '../../schemas/rules/analytics-batch.ts';
import { ingest } from '../../dashboard/analytics/api.ts';
import { sqliteFixture, postgresFixture } from '../../dashboard/testing/stores.ts';

const { values } = parseArgs({
  options: {
    batches: { type: 'string', default: '200' },
    rounds: { type: 'string', default: '5' },
    size: { type: 'string', default: '1000' },
    endpoints: { type: 'string', default: '1' },
    postgres: { type: 'boolean', default: false },
    http: { type: 'boolean', default: false },
  },
});
const BATCHES = Number(values.batches);
const ROUNDS = Number(values.rounds);
const SIZE = Number(values.size);
const ENDPOINTS = Math.min(Number(values.endpoints), 4);

const T0 = Date.UTC(2026, 10, 29, 12, 0, 0);
const PATHS = ['/bench/get', '/bench/items/{id}', '/bench/users/{id}/orders', '/bench/health'];

/** The JSON text of batch `n`: SIZE records starting at T0 + n x SIZE x 0.2 ms. */
function batchText(n: number): string {
  const w = new AnalyticsColumnsWriter();
  for (let i = 0; i < SIZE; i++) {
    const k = n * SIZE + i;
    const status = ENDPOINTS > 1 && k % 97 === 0 ? 429 : ENDPOINTS > 1 && k % 53 === 0 ? 500 : 200;
    w.add(
      T0 + k * 0.2,
      'org-bench',
      'api-protected',
      '',
      'b3f1c5d2e8a94f0b6c7d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2b',
      'bench-key',
      'GET',
      PATHS[k % ENDPOINTS] ?? '/',
      status,
      0.4 + (k % 17) * 0.13,
      0.3 + (k % 11) * 0.1,
      0,
      2,
      status === 429 ? 'rate_limit' : '',
      undefined,
    );
  }
  return JSON.stringify(w.batch(1));
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[m] ?? NaN) : ((s[m - 1] ?? NaN) + (s[m] ?? NaN)) / 2;
}

const cpuUs = (): number => {
  const u = process.cpuUsage();
  return u.user + u.system;
};

async function main(): Promise<void> {
  const fx = values.postgres ? postgresFixture() : sqliteFixture();
  const store = await fx.open(await fx.fresh());
  const deps = { store };
  const texts = Array.from({ length: BATCHES * ROUNDS }, (_, n) => batchText(n));
  const perRecord = { cpu: [] as number[], wall: [] as number[], parse: [] as number[] };
  try {
    // Warm-up: a few batches at a time of their own, before the rounds.
    for (let n = 0; n < 10; n++) {
      const body = JSON.parse(batchText(BATCHES * ROUNDS + n)) as Record<string, unknown>;
      await ingest(deps, [], body, ANALYTICS_COLUMNS_TYPE);
    }
    for (let r = 0; r < ROUNDS; r++) {
      let parseUs = 0;
      const c0 = cpuUs();
      const w0 = performance.now();
      for (let b = 0; b < BATCHES; b++) {
        const p0 = cpuUs();
        const body = JSON.parse(texts[r * BATCHES + b] ?? '') as Record<string, unknown>;
        if (tooDeep(body) !== undefined) throw new Error('too deep');
        parseUs += cpuUs() - p0;
        const reply = await ingest(deps, [], body, ANALYTICS_COLUMNS_TYPE);
        if (reply.status !== 200) throw new Error(`ingest answered ${String(reply.status)}`);
      }
      const records = BATCHES * SIZE;
      perRecord.cpu.push((cpuUs() - c0) / records);
      perRecord.wall.push(((performance.now() - w0) * 1000) / records);
      perRecord.parse.push(parseUs / records);
    }
  } finally {
    await store.close();
    await fx.stop();
  }
  const f = (xs: number[]): string =>
    `${median(xs).toFixed(2)} (${Math.min(...xs).toFixed(2)} to ${Math.max(...xs).toFixed(2)})`;
  console.log(
    `dashboard ingest, ${values.postgres ? 'postgres' : 'sqlite'}, ${String(ROUNDS)} rounds of ${String(BATCHES)} batches of ${String(SIZE)} records as columns, ${String(ENDPOINTS)} endpoint(s)`,
  );
  console.log(`  CPU per record:  ${f(perRecord.cpu)} us (of it the JSON parse ${f(perRecord.parse)} us)`);
  console.log(`  wall per record: ${f(perRecord.wall)} us`);
}

const NODE_SECRET = 'bench-node-secret-0123456789';

/** CPU time (user and system) of a process so far, in microseconds (USER_HZ is 100). */
function processCpuUs(pid: number): number {
  const f =
    readFileSync(`/proc/${String(pid)}/stat`, 'latin1')
      .split(') ')[1]
      ?.split(' ') ?? [];
  return (Number(f[11]) + Number(f[12])) * 10_000;
}

/** POSTs `body` to the dashboard on `port`; resolves with its status. */
function post(agent: http.Agent, port: number, path: string, body: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        agent,
        port,
        host: '127.0.0.1',
        path,
        method: 'POST',
        headers: { 'content-type': ANALYTICS_COLUMNS_TYPE, 'x-svc-node-secret': NODE_SECRET },
      },
      (res) => {
        res.resume();
        res.on('end', () => {
          resolve(res.statusCode ?? 0);
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** `--http`: a dashboard process takes the batches over HTTP; its CPU per record. */
async function overHttp(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'svc-dashboard-ingest-'));
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [
      join(import.meta.dirname, '..', '..', 'dashboard', 'main.ts'),
      ...['--host', '127.0.0.1', '--port', String(port), '--data-dir', join(dir, 'data')],
      ...['--admin-secret', 'bench-dashboard-admin-0123456789', '--node-secret', NODE_SECRET],
      ...['--log-level', 'warn'],
    ],
    { stdio: 'ignore' },
  );
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const perRecord: number[] = [];
  try {
    await waitFor('the dashboard', async () => {
      try {
        return (await fetch(`http://127.0.0.1:${String(port)}/ready`)).status === 200 ? true : undefined;
      } catch {
        return undefined;
      }
    });
    const pid = child.pid ?? 0;
    const texts = Array.from({ length: BATCHES * ROUNDS }, (_, n) => batchText(n));
    for (let n = 0; n < 10; n++)
      await post(agent, port, '/system/analytics', batchText(BATCHES * ROUNDS + n));
    for (let r = 0; r < ROUNDS; r++) {
      const c0 = processCpuUs(pid);
      for (let b = 0; b < BATCHES; b++) {
        const status = await post(agent, port, '/system/analytics', texts[r * BATCHES + b] ?? '');
        if (status !== 200) throw new Error(`the dashboard answered ${String(status)}`);
      }
      perRecord.push((processCpuUs(pid) - c0) / (BATCHES * SIZE));
    }
  } finally {
    agent.destroy();
    child.kill('SIGTERM');
    await new Promise((resolve) => child.once('exit', resolve));
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(
    `dashboard process over HTTP, sqlite, ${String(ROUNDS)} rounds of ${String(BATCHES)} batches of ${String(SIZE)} records as columns, ${String(ENDPOINTS)} endpoint(s)`,
  );
  console.log(
    `  its CPU per record: ${median(perRecord).toFixed(2)} (${Math.min(...perRecord).toFixed(2)} to ${Math.max(...perRecord).toFixed(2)}) us`,
  );
}

await (values.http ? overHttp() : main());
