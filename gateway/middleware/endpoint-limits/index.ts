/**
 * Per-endpoint rate limits of the key (`access_rights[api].endpoints`): a `path` (a regular
 * expression matched against the whole request path after the listen path, such as `/users` or
 * `/users/[0-9]+`) and, per method, `limit: {rate, per}`; each endpoint and method counts apart,
 * per key. Over it: 429 `Rate Limit Exceeded`. Compiled once per session entry.
 */
import type { AccessDefinition } from '../../../schemas/generated/models.ts';
import { counterIdOf, counterName } from '../../limits/counters.ts';
import { UNAVAILABLE } from '../../limits/guard.ts';
import { reject } from '../../pipeline/compose.ts';
import { waits } from '../../pipeline/steps.ts';
import type { GatewayMiddleware } from '../deps.ts';
import { GatewayError } from '../../pipeline/errors.ts';

interface CompiledEndpoint {
  path: string;
  re: RegExp;
  methods: Map<string, { rate: number; per: number }>;
}

const compiled = new WeakMap<AccessDefinition, CompiledEndpoint[]>();

function endpointsOf(ar: AccessDefinition): CompiledEndpoint[] {
  let c = compiled.get(ar);
  if (c === undefined) {
    c = (ar.endpoints ?? []).map((e) => ({
      path: e.path,
      re: new RegExp(`^(?:${e.path})/?$`),
      methods: new Map(e.methods.map((m) => [m.name.toUpperCase(), m.limit])),
    }));
    compiled.set(ar, c);
  }
  return c;
}

/** See the module comment. */
export const endpointLimits: GatewayMiddleware = {
  name: 'endpoint-limits',
  enabled: (api) => api.use_keyless !== true && api.disable_rate_limit !== true,
  create: (api, deps) => {
    const apiId = api.api_id ?? '';
    return waits((ctx) => {
      const ar = ctx.session?.access_rights?.[apiId];
      const session = ctx.session;
      if (ar?.endpoints === undefined || ar.endpoints.length === 0 || session === undefined) return undefined;
      if (ctx.state.keyId === undefined) return undefined;
      const keyId = counterIdOf(ctx.state.keyId, session);
      const rest = ctx.path.slice(ctx.route.listenPath.length) || '/';
      const method = ctx.method.toUpperCase();
      for (const e of endpointsOf(ar)) {
        const limit = e.methods.get(method);
        if (limit === undefined || !e.re.test(rest)) continue;
        const name = counterName.endpoint(keyId, apiId, method, e.path);
        return deps.limits
          .run(() => deps.counters.rate(name, limit.rate, limit.per * 1000))
          .then((v) => {
            if (v === UNAVAILABLE) {
              return deps.limits.failOpen ? undefined : reject(ctx, GatewayError.limitsUnavailable());
            }
            if (v.allowed) return undefined;
            ctx.emit('RateLimitExceeded', `Rate Limit Exceeded on ${method} ${e.path}`);
            deps.metrics?.refused('endpoint_rate_limit');
            return reject(ctx, GatewayError.rateLimitExceeded());
          });
      }
      return undefined;
    });
  },
};
