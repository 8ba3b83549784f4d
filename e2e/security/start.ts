/**
 * The gateway process of the security suites: e2e/harness's gateway, waited for longer (a loaded
 * machine starts it slowly) and stopped after the suite, or at once when it never answers.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { join } from 'node:path';
import { after } from 'node:test';
import { freePort, httpRequest, startNode, waitFor, type GatewayProc } from '../harness/processes.ts';

const started: GatewayProc[] = [];
after(async () => {
  for (const g of started) await g.stop();
});

/** Starts `gateway/main.ts` (one worker unless `workers`), `env` added; resolves once /hello answers. */
export async function startGw(opts: {
  name: string;
  secret: string;
  dataDir: string;
  logDir: string;
  workers?: number;
  env?: Record<string, string>;
  /** Run as this user and group (the chart's 65532), through setpriv: the suite runs as root. */
  user?: number;
}): Promise<GatewayProc> {
  const port = await freePort();
  const args = ['--port', String(port), '--host', '127.0.0.1', '--workers', String(opts.workers ?? 1)];
  const env = { SVC_GW_SECRET: opts.secret, SVC_GW_DATA_DIR: opts.dataDir, ...opts.env };
  const proc =
    opts.user === undefined
      ? startNode({ name: opts.name, script: 'gateway/main.ts', args, env, logDir: opts.logDir })
      : startNode({
          name: opts.name,
          script: 'e2e/security/testdata/as-user.ts',
          args: [String(opts.user), join(import.meta.dirname, '..', '..', 'gateway', 'main.ts'), ...args],
          env,
          logDir: opts.logDir,
        });
  const gw: GatewayProc = { ...proc, url: `http://127.0.0.1:${String(port)}`, port, secret: opts.secret };
  started.push(gw);
  try {
    await waitFor(
      `${opts.name} /hello (log ${join(opts.logDir, `${opts.name}.log`)})`,
      async () => (await httpRequest(`${gw.url}/hello`)).status === 200,
      120_000,
      200,
    );
  } catch (err) {
    await proc.stop();
    throw err;
  }
  return gw;
}

/** e2e/harness's httpRequest, with a longer deadline (a reload compiling plugins is slow on a loaded machine). */
export async function request(
  url: string,
  opts: { method?: string; headers?: Record<string, string>; body?: string } = {},
  timeoutMs = 60_000,
): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
  return httpRequest(url, opts, timeoutMs);
}
