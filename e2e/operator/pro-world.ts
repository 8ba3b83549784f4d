/**
 * What the operator suites of mode pro (pro, pro-api-key) start beside their world's control
 * plane: a gateway loading the tenant's organisation from the dashboard, and the operator of mode
 * pro writing to that dashboard with the tenant's system key and a signed license, watching `shop`.
 */
import { join } from 'node:path';
import {
  createTenant,
  signedLicense,
  type DashboardProc,
  type DashboardTenant,
} from '../harness/dashboard.ts';
import { startGateway, type GatewayProc, type OperatorProc } from '../harness/processes.ts';
import { startWorldOperator, type OperatorWorld } from './helpers.ts';
import { startedOrStopped } from '../../lib/testing/teardown.ts';

/**
 * A tenant `<name>-org` of the dashboard, the gateway `<name>-gateway` (secret
 * `e2e-<name>-gateway`, its data in `pro-gw` of the world's folder) of that tenant, and the
 * operator `<name>-operator` resyncing every `resync`.
 */
export async function startProGatewayAndOperator(
  w: OperatorWorld,
  o: {
    name: string;
    dashboard: DashboardProc;
    nodeSecret: string;
    resync: string;
  },
): Promise<{ tenant: DashboardTenant; gw: GatewayProc; operator: OperatorProc }> {
  const tenant = await createTenant(o.dashboard.url, `${o.name}-org`);
  return startedOrStopped(async (started) => {
    const gw = await startGateway({
      name: `${o.name}-gateway`,
      secret: `e2e-${o.name}-gateway`,
      dataDir: join(w.dir, 'pro-gw'),
      logDir: w.dir,
      env: {
        SVC_GW_DASHBOARD_URL: o.dashboard.url,
        SVC_GW_NODE_SECRET: o.nodeSecret,
        SVC_GW_DASHBOARD_ORGS: tenant.org,
      },
    });
    started.push(gw);
    const operator = await startWorldOperator(w, {
      name: `${o.name}-operator`,
      org: tenant.org,
      env: {
        SVC_MODE: 'pro',
        SVC_URL: o.dashboard.url,
        SVC_AUTH: tenant.system.key,
        ...(await signedLicense('e2e')),
        SVC_RESYNC_PERIOD: o.resync,
        WATCH_NAMESPACE: 'shop',
      },
    });
    return { tenant, gw, operator };
  });
}
