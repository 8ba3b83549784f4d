/**
 * Mode pro for suites, set up once: a dashboard process with a node secret over SQLite (a data
 * directory) or PostgreSQL (a server of its own), an echo upstream, the organisations and their
 * users, and gateways loading their organisation from the dashboard. `stop` ends all of it.
 */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startPostgres, type TestPostgres } from '../../dashboard/testing/postgres.ts';
import { startRedis, type TestRedis } from '../../gateway/testing/redis-server.ts';
import {
  createTenant,
  dashboardCall,
  startDashboardProc,
  type DashboardProc,
  type DashboardTenant,
} from './dashboard.ts';
import { freePort, startEchoUpstream, startGateway, type GatewayProc } from './processes.ts';

/** An echo upstream (processes.ts startEchoUpstream). */
export type EchoUpstream = Awaited<ReturnType<typeof startEchoUpstream>>;

/** A dashboard in mode pro and what a suite starts around it. */
export interface ProWorld {
  /** The temporary directory of the logs (`<name>.log`) and the data. */
  readonly dir: string;
  /** The SQLite data directory of the dashboard (unused over PostgreSQL). */
  readonly dashboardData: string;
  /** The running dashboard: a new one after `startDashboard`. */
  dashboard: DashboardProc;
  /** An echo upstream for the suite's APIs. */
  readonly upstream: EchoUpstream;
  /** The Redis server the gateways count in (SVC_GW_STORE), when asked for (`redis: true`). */
  readonly redis: TestRedis | undefined;
  /** Every gateway started (`startGateway`, or pushed by the suite), stopped by `stop`. */
  readonly gateways: GatewayProc[];
  /** Creates an organisation with its system user and a reader (harness/dashboard.ts). */
  tenant(org: string): Promise<DashboardTenant>;
  /** A call as `t`'s system user that must answer 200. */
  write(t: DashboardTenant, method: string, path: string, body: unknown): Promise<void>;
  /** Starts the dashboard again, on the same port over the same data (after `dashboard.stop()`). */
  startDashboard(): Promise<DashboardProc>;
  /**
   * Starts a gateway loading the organisation `org` from the dashboard (`dataDir`: `<dir>/<name>`
   * unless given; `pollMs`: SVC_GW_DASHBOARD_POLL_INTERVAL_MS), added to `gateways`. It has
   * answered `/hello`; what it has loaded is the suite's to wait for.
   */
  startGateway(opts: {
    name: string;
    secret: string;
    org: string;
    dataDir?: string;
    workers?: number;
    startTimeoutMs?: number;
    pollMs?: number;
    env?: Record<string, string>;
  }): Promise<GatewayProc>;
  /** Stops the gateways, the dashboard, the upstream, PostgreSQL and Redis. */
  stop(): Promise<void>;
}

/** Starts a dashboard in mode pro and an echo upstream. */
export async function startProWorld(opts: {
  /** Names the temporary directory: `svc-pro-<name>-`. */
  name: string;
  nodeSecret: string;
  storage?: 'sqlite' | 'postgres';
  /** The dashboard's process name (its log file); `dashboard` unless given. */
  dashboardName?: string;
  /** The PostgreSQL database (`svc` unless given). */
  database?: string;
  /** The echo upstream's name (startEchoUpstream: `x-upstream`, `upstream`); `echo` unless given. */
  upstream?: string;
  /** Starts a Redis server; the gateways use it as their store (SVC_GW_STORE) unless `env` says otherwise. */
  redis?: boolean;
}): Promise<ProWorld> {
  const dir = mkdtempSync(join(tmpdir(), `svc-pro-${opts.name}-`));
  const dashboardData = join(dir, 'dashboard');
  const upstream = await startEchoUpstream(opts.upstream);
  let pg: TestPostgres | undefined;
  let postgresUrl: string | undefined;
  const port = await freePort();
  const startDashboard = (): Promise<DashboardProc> =>
    startDashboardProc({
      name: opts.dashboardName ?? 'dashboard',
      logDir: dir,
      port,
      ...(postgresUrl === undefined ? { dataDir: dashboardData } : { postgresUrl }),
      args: ['--node-secret', opts.nodeSecret],
    });
  let dashboard: DashboardProc;
  let redis: TestRedis | undefined;
  try {
    if (opts.redis === true) redis = await startRedis();
    if (opts.storage === 'postgres') {
      pg = await startPostgres();
      postgresUrl = await pg.createDatabase(opts.database ?? 'svc');
    }
    dashboard = await startDashboard();
  } catch (err) {
    await upstream.close();
    await pg?.stop();
    await redis?.stop();
    throw err;
  }
  const gateways: GatewayProc[] = [];
  const world: ProWorld = {
    dir,
    dashboardData,
    dashboard,
    upstream,
    redis,
    gateways,
    tenant: (org) => createTenant(world.dashboard.url, org),
    write: async (t, method, path, body) => {
      const r = await dashboardCall(world.dashboard.url, method, path, { auth: t.system.key, body });
      assert.equal(r.status, 200, `${method} ${path}: ${r.text}`);
    },
    startDashboard: async () => (world.dashboard = await startDashboard()),
    startGateway: async (g) => {
      const started = await startGateway({
        name: g.name,
        secret: g.secret,
        dataDir: g.dataDir ?? join(dir, g.name),
        logDir: dir,
        ...(g.workers === undefined ? {} : { workers: g.workers }),
        ...(g.startTimeoutMs === undefined ? {} : { startTimeoutMs: g.startTimeoutMs }),
        env: {
          ...(redis === undefined ? {} : { SVC_GW_STORE: redis.url }),
          SVC_GW_DASHBOARD_URL: world.dashboard.url,
          SVC_GW_NODE_SECRET: opts.nodeSecret,
          SVC_GW_DASHBOARD_ORGS: g.org,
          ...(g.pollMs === undefined ? {} : { SVC_GW_DASHBOARD_POLL_INTERVAL_MS: String(g.pollMs) }),
          ...g.env,
        },
      });
      gateways.push(started);
      return started;
    },
    stop: async () => {
      for (const g of gateways) await g.stop();
      await world.dashboard.stop();
      await upstream.close();
      await pg?.stop();
      await redis?.stop();
    },
  };
  return world;
}

/**
 * Writes, as `t`'s, the API `id` (its name too) proxying to the world's upstream on the listen
 * path `/<id>/` unless `listenPath` says, stripping it; `fields` add to its definition.
 */
export async function writeApi(
  world: ProWorld,
  t: DashboardTenant,
  id: string,
  fields: Record<string, unknown>,
  listenPath = `/${id}/`,
): Promise<void> {
  await world.write(t, 'POST', '/api/apis', {
    api_definition: {
      api_id: id,
      name: id,
      ...fields,
      proxy: { listen_path: listenPath, target_url: world.upstream.url, strip_listen_path: true },
    },
  });
}

/**
 * Writes, as `t`'s, the active policy `id` (named `name` unless `opts.name` says) granting the
 * API `api` (its Default version), `rate` requests a minute (1000 unless given), no quota.
 */
export async function writePolicy(
  world: ProWorld,
  t: DashboardTenant,
  id: string,
  api: string,
  opts: { name?: string; rate?: number } = {},
): Promise<void> {
  await world.write(t, 'POST', '/api/portal/policies', {
    id,
    name: opts.name ?? id,
    state: 'active',
    rate: opts.rate ?? 1000,
    per: 60,
    quota_max: -1,
    access_rights: { [api]: { api_id: api, api_name: api, versions: ['Default'] } },
  });
}

/**
 * The OAuth API `stock` (client credentials, proxying to the world's upstream) and the policy
 * `stock-clients` granting it, written to the dashboard as `t`'s; `api` adds to the API's
 * definition.
 */
export async function writeStockOauth(
  world: ProWorld,
  t: DashboardTenant,
  api: Record<string, unknown> = {},
): Promise<void> {
  await writeApi(world, t, 'stock', {
    ...api,
    use_oauth2: true,
    oauth_meta: { allowed_access_types: ['client_credentials'] },
  });
  await writePolicy(world, t, 'stock-clients', 'stock', { name: 'stock clients' });
}
