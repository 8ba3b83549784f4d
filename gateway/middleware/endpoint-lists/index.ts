/**
 * Endpoint lists of the request's version, from `extended_paths` (`ignored`, `white_list`,
 * `black_list`: a path, and the methods of its `method_actions` or its `method`; none: every
 * method) and the older `paths` (plain paths, every method), compiled once per API. As in the
 * reference gateway, the first match decides, in the order ignored, black list, white list:
 * - `ignored`: served without authentication: the authentication, access and key-limit
 *   middleware (wrapped by `unlessIgnored` in routes/chain.ts) let the request through untouched;
 * - `black_list`: 403 `Requested endpoint is forbidden`;
 * - `white_list`: served; when the version has a white list, any other endpoint gets that 403.
 * `ignore_case` (per entry) and `ignore_endpoint_case` (the version) match paths
 * case-insensitively. Disabled entries are skipped.
 */
import type { EndPointMeta, GatewayApiDefinition, VersionInfo } from '../../../schemas/generated/models.ts';
import { endpointMethods } from '../../../schemas/rules/endpoints.ts';
import { reject } from '../../pipeline/compose.ts';
import { around, before, waits } from '../../pipeline/steps.ts';
import type { GatewayMiddleware } from '../deps.ts';
import type { RequestContext } from '../../pipeline/context.ts';
import {
  compileEndpoint,
  matchingEntry,
  perVersionMiddleware,
  servedVersion,
  servingVersions,
  type CompiledEndpoint,
} from '../../pipeline/endpoints.ts';
import { GatewayError } from '../../pipeline/errors.ts';

const IGNORED = 0;
const BLOCKED = 1;
const ALLOWED = 2;

interface EndpointLists {
  /** Every entry in match order (ignored, black list, white list), with its list. */
  entries: { endpoint: CompiledEndpoint; list: 0 | 1 | 2 }[];
  /** Whether the version has a white list: then an endpoint that matches nothing is refused. */
  whiteList: boolean;
  /** Whether the version has ignored endpoints (the auth middleware then check `isIgnored`). */
  ignored: boolean;
}

/** The lists of `api`'s served version, compiled; undefined when it has none. */
export function compileEndpointLists(api: GatewayApiDefinition): EndpointLists | undefined {
  const v = servedVersion(api);
  return v === undefined ? undefined : compileVersionLists(v);
}

/** The lists of a version, compiled; undefined when it has none. */
export function compileVersionLists(v: VersionInfo): EndpointLists | undefined {
  const versionCase = v.ignore_endpoint_case === true;
  const entries: EndpointLists['entries'] = [];
  const add = (
    list: 0 | 1 | 2,
    older: readonly string[] | undefined,
    extended: readonly EndPointMeta[] | undefined,
  ): void => {
    for (const path of older ?? []) {
      if (path !== '') entries.push({ endpoint: compileEndpoint(path, [], versionCase), list });
    }
    for (const e of extended ?? []) {
      if (e.disabled === true || e.path === undefined || e.path === '') continue;
      const ignoreCase = versionCase || e.ignore_case === true;
      entries.push({ endpoint: compileEndpoint(e.path, endpointMethods(e), ignoreCase), list });
    }
  };
  add(IGNORED, v.paths?.ignored, v.extended_paths?.ignored);
  add(BLOCKED, v.paths?.black_list, v.extended_paths?.black_list);
  add(ALLOWED, v.paths?.white_list, v.extended_paths?.white_list);
  if (entries.length === 0) return undefined;
  return {
    entries,
    whiteList: entries.some((e) => e.list === ALLOWED),
    ignored: entries.some((e) => e.list === IGNORED),
  };
}

/** Requests on an ignored endpoint (set by the endpoint-lists handler, read by `unlessIgnored`). */
const ignoredRequests = new WeakSet<RequestContext>();

/** Whether the request is on an ignored endpoint of its API (served without authentication). */
export function isIgnored(ctx: RequestContext): boolean {
  return ignoredRequests.has(ctx);
}

/** See the module comment. */
export const endpointLists: GatewayMiddleware = perVersionMiddleware(
  'endpoint-lists',
  'lists',
  compileVersionLists,
  (listsOf) =>
    before((ctx) => {
      const lists = listsOf(ctx);
      if (lists === undefined) return undefined;
      const found = matchingEntry(lists.entries, ctx)?.list;
      if (found === BLOCKED || (found === undefined && lists.whiteList)) {
        return reject(ctx, GatewayError.endpointForbidden());
      }
      if (found === IGNORED) ignoredRequests.add(ctx);
      return undefined;
    }),
);

/**
 * `m`, skipped on requests to ignored endpoints (authentication, access and key limits: they need
 * a key, which an ignored endpoint does not ask for). For an API without ignored endpoints, `m`
 * is compiled unchanged: nothing is added to its requests.
 */
export function unlessIgnored(m: GatewayMiddleware): GatewayMiddleware {
  return {
    ...m,
    create: async (api, deps) => {
      const made = await m.create(api, deps);
      if (!servingVersions(api).some((v) => compileVersionLists(v)?.ignored === true)) return made;
      const closes = { close: made.close };
      if ('before' in made) {
        const step = made.before;
        return before((ctx) => (ignoredRequests.has(ctx) ? undefined : step(ctx)), closes);
      }
      if ('wait' in made) {
        const step = made.wait;
        return waits((ctx) => (ignoredRequests.has(ctx) ? undefined : step(ctx)), closes);
      }
      const handle = made.handle;
      return around(
        (ctx, next) => (ignoredRequests.has(ctx) ? next().then(() => undefined) : handle(ctx, next)),
        closes,
      );
    },
  };
}
