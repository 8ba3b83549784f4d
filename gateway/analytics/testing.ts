/**
 * What the analytics tests share (record-buffer.test.ts, analytics.test.ts and the wire test
 * against a real dashboard, e2e/contract/analytics-wire.test.ts): requests as the pipeline hands
 * them to the observer once over, a gateway's analytics sending to a dashboard at a URL, and its
 * records counter.
 */
import type { Registry } from 'prom-client';
import { silentLogger } from '../../lib/log.ts';
import { RequestContext } from '../pipeline/context.ts';
import { GatewayError } from '../pipeline/errors.ts';
import type { RouteInfo } from '../pipeline/route.ts';
import { Analytics } from './analytics.ts';

/** The node secret the tests' gateways and dashboards share. */
export const NODE_SECRET = 'analytics-test-node-secret';

const log = silentLogger();

/** The route of API `orders` (listen path `/shop`) of organisation `org`. */
export const analyticsRoute = (org: string): RouteInfo =>
  ({ id: 'orders', listenPath: '/shop', api: { org_id: org } }) as unknown as RouteInfo;

/** A POST of `path` on `route` that is over, as the pipeline hands it to the observer; `init` sets its state. */
export function endedRequest(
  route: RouteInfo,
  path: string,
  init: (c: RequestContext) => void = () => undefined,
): RequestContext {
  const c = new RequestContext({
    method: 'POST',
    path,
    query: '',
    headers: { host: 'gw.example', 'content-length': '12' },
    socketAddress: '10.1.2.3',
    route,
    listener: { protocol: 'http', trustForwarded: false },
    log,
  });
  init(c);
  return c;
}

/** A request of key `key` that took 2 ms, refused by the rate limit when `refused`. */
export const keyedRequest = (route: RouteInfo, path: string, key: string, refused = false): RequestContext =>
  endedRequest(route, path, (c) => {
    c.state.keyId = key;
    c.state.startedAt = performance.now() - 2;
    if (refused) c.refusal = { rejected: GatewayError.rateLimitExceeded() };
  });

/** A gateway's analytics sending every record to the dashboard at `url`, on a long interval. */
export function analyticsTo(url: string, registry?: Registry): Analytics {
  return new Analytics({
    url,
    nodeSecret: NODE_SECRET,
    sampleRate: 1,
    bufferSize: 10_000,
    flushIntervalMs: 600_000,
    log,
    registry,
  });
}

/** The records counter's value for `outcome`. */
export async function counted(registry: Registry, outcome: string): Promise<number> {
  const m = await registry.getSingleMetricAsString('svc_gateway_analytics_records_total');
  return Number(new RegExp(`outcome="${outcome}"\\} (\\d+)`).exec(m)?.[1] ?? NaN);
}
