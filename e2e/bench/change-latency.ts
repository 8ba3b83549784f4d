/**
 * Convergence of one change at a time (issue 33 item 2), for `make bench-operator`: among N
 * ApiDefinitions already serving, `count` changes one after the other, each a new listen path for
 * another API, sent to the API server as a merge patch; each timed from the API server's answer
 * (the change accepted) until the gateway serves the new path, polled every 2 ms on a kept-alive
 * connection.
 */
import { Agent, request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { ControlPlane } from '../harness/control-plane.ts';

/** Poll interval, ms: the resolution of each figure. */
const POLL_MS = 2;
/** A change not served after this long fails the run, ms. */
const CHANGE_TIMEOUT_MS = 30_000;

/** A merge patch of one ApiDefinition through the API server; resolves when it has answered. */
function patchApi(cp: ControlPlane, namespace: string, name: string, patch: unknown): Promise<void> {
  const body = JSON.stringify(patch);
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      `${cp.server}/apis/svc.svc.io/v1alpha1/namespaces/${namespace}/apidefinitions/${name}`,
      {
        method: 'PATCH',
        ca: readFileSync(cp.caFile),
        headers: {
          authorization: `Bearer ${cp.token}`,
          'content-type': 'application/merge-patch+json',
          'content-length': Buffer.byteLength(body),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          if (res.statusCode === 200) resolve();
          else
            reject(new Error(`PATCH ${name}: ${String(res.statusCode)} ${Buffer.concat(chunks).toString()}`));
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Whether the gateway serves `path` from the upstream (200 with the upstream's header). */
function served(gatewayUrl: string, path: string, agent: Agent): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${gatewayUrl}${path}`, { agent }, (res) => {
      res.resume();
      res.on('end', () => {
        resolve(res.statusCode === 200 && res.headers['x-upstream'] !== undefined);
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * Milliseconds from each change's acceptance until the gateway serves it. `names[k]` gets the
 * listen path `pathOf(k)`; the APIs serve before.
 */
export async function changeLatencies(opts: {
  cp: ControlPlane;
  gatewayUrl: string;
  namespace: string;
  names: readonly string[];
  pathOf: (k: number) => string;
}): Promise<number[]> {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const took: number[] = [];
  try {
    for (const [k, name] of opts.names.entries()) {
      const path = opts.pathOf(k);
      await patchApi(opts.cp, opts.namespace, name, { spec: { proxy: { listen_path: path } } });
      const accepted = performance.now();
      for (;;) {
        if (await served(opts.gatewayUrl, `${path}probe`, agent)) break;
        if (performance.now() - accepted > CHANGE_TIMEOUT_MS)
          throw new Error(`${name}: ${path} not served ${String(CHANGE_TIMEOUT_MS)} ms after the change`);
        await sleep(POLL_MS);
      }
      took.push(performance.now() - accepted);
    }
  } finally {
    agent.destroy();
  }
  return took;
}
