/**
 * The local world of the operator suites (`make e2e`, world.ts): a private control plane with the
 * CRDs and the suite's namespaces, two gateway processes, echo upstreams on 127.0.0.1 and the
 * operator as a process; `world.local` gives the fault tests the processes themselves.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startControlPlane, type ControlPlane } from './control-plane.ts';
import {
  httpRequest,
  startEchoUpstream,
  startGateway,
  startOperator,
  type GatewayProc,
} from './processes.ts';
import { startedOrStopped } from '../../lib/testing/teardown.ts';
import type { ContextGateway, LocalWorld, World, WorldOptions } from './world-types.ts';

const root = join(import.meta.dirname, '..', '..');

/**
 * A suite's control plane: the CRDs, the `namespaces` created, and a directory of its own for
 * logs and data (`svc-e2e-<name>-...`).
 */
export async function startCluster(
  name: string,
  namespaces: readonly string[] = [],
): Promise<{ dir: string; cp: ControlPlane }> {
  const dir = await mkdtemp(join(tmpdir(), `svc-e2e-${name}-`));
  return startedOrStopped(async (started) => {
    const cp = await startControlPlane({ crdDir: join(root, 'charts', 'svc-operator', 'crds') });
    started.push(cp);
    for (const ns of namespaces) await cp.kubectl(['create', 'namespace', ns]);
    return { dir, cp };
  });
}

/**
 * A suite's two gateways (`<name>-gateway`, `<name>-gateway-2`) with the given secrets, their
 * data and logs in `dir`, `env` added to both.
 */
export async function startGatewayPair(opts: {
  name: string;
  dir: string;
  secrets: readonly [string, string];
  env?: Record<string, string>;
}): Promise<[GatewayProc, GatewayProc]> {
  const { name, dir } = opts;
  const [secret, secret2] = opts.secrets;
  const env = opts.env ? { env: opts.env } : {};
  return startedOrStopped(async (started) => {
    const gw = await startGateway({
      name: `${name}-gateway`,
      secret,
      dataDir: join(dir, 'gw'),
      logDir: dir,
      ...env,
    });
    started.push(gw);
    const gw2 = await startGateway({
      name: `${name}-gateway-2`,
      secret: secret2,
      dataDir: join(dir, 'gw2'),
      logDir: dir,
      ...env,
    });
    return [gw, gw2];
  });
}

/** Starts a local world for the suite `opts` describes. */
export async function startLocalWorld(opts: WorldOptions): Promise<World> {
  const { dir, cp } = await startCluster(opts.name, [...opts.namespaces, 'svc-operator-system']);
  // What is started is stopped again if a later start fails (the operator under load, say).
  return startedOrStopped(async (started) => {
    started.push(cp);
    const upstreams = [await startEchoUpstream()];
    started.push(...upstreams);
    const secret2 = opts.secrets[1];
    const [gw, gw2] = await startGatewayPair({ name: opts.name, dir, secrets: opts.secrets });
    started.push(gw, gw2);
    const org = opts.org ?? 'e2e-org';
    let runs = 0;
    const local: LocalWorld = {
      cp,
      dir,
      gw,
      gw2,
      operator: undefined,
      async startOperator() {
        runs++;
        local.operator = await startOperator({
          name: runs === 1 ? `${opts.name}-operator` : `${opts.name}-operator-${String(runs)}`,
          gateway: gw,
          kubeconfig: cp.kubeconfig,
          logDir: dir,
          org,
          ...(opts.operatorEnv ? { env: opts.operatorEnv } : {}),
        });
        return local.operator;
      },
      async stopOperator() {
        await local.operator?.stop();
        local.operator = undefined;
      },
    };
    await local.startOperator();
    const first = upstreams[0];
    if (first === undefined) throw new Error('no upstream');
    const second = (): ContextGateway => ({
      url: local.gw2.url,
      secret: local.gw2.secret,
      operatorUrl: local.gw2.url,
    });
    let restarts = 0;
    return {
      cluster: false,
      kubectl: (args, kopts) => cp.kubectl(args, kopts),
      gateway: gw,
      secondGateway: () => Promise.resolve(second()),
      async stopSecondGateway() {
        await local.gw2.stop();
      },
      async startSecondGateway() {
        restarts++;
        local.gw2 = await startGateway({
          name: `${opts.name}-gateway-2-${String(restarts + 1)}`,
          secret: secret2,
          dataDir: join(dir, 'gw2'),
          logDir: dir,
          port: local.gw2.port,
        });
        return second();
      },
      stopOperator: () => local.stopOperator(),
      async startOperator() {
        await local.startOperator();
      },
      async operatorMetrics() {
        const op = local.operator;
        if (op === undefined) throw new Error('the operator is stopped');
        return (await httpRequest(`${op.opsUrl}/metrics`)).body;
      },
      org,
      ns: (name) => name,
      upstream: { name: 'echo', url: first.url },
      async startUpstream(name) {
        const u = await startEchoUpstream(name);
        upstreams.push(u);
        return { name, url: u.url };
      },
      local,
      async stop() {
        await local.stopOperator();
        await local.gw.stop();
        await local.gw2.stop();
        for (const u of upstreams) await u.close();
        await cp.stop();
      },
    };
  });
}
