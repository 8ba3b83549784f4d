/**
 * Versions chosen per request (`version_data.not_versioned: false`), as the reference gateway
 * chooses them: `definition.location` says where the request names its version:
 * - `header`: the header `definition.key`;
 * - `url-param`: the query parameter `definition.key`;
 * - `url`: the first path segment after the listen path (`/api/v2/users` names `v2`); with
 *   `url_versioning_pattern`, a segment that does not match it names no version.
 * A request that names none is served by `default_version`; without one it gets 403 `Version
 * information not found`. A name that is not a version gets 403 `This API version does not seem
 * to exist`, unless `fallback_to_default` sends it to the default version. `strip_versioning_data`
 * (and, for `url`, `strip_path`) removes the version from the request before it goes upstream.
 * The chosen version's name is `ctx.state.version`: every endpoint middleware applies that
 * version's settings. The version's `override_target` (versioned or not) replaces the API's
 * target for its requests.
 */
import type { GatewayApiDefinition, VersionInfo } from '../../../schemas/generated/models.ts';
import { isTargetProblem, parseTarget, type Target } from '../../../schemas/rules/target.ts';
import { reject } from '../../pipeline/compose.ts';
import { before } from '../../pipeline/steps.ts';
import type { GatewayMiddleware } from '../deps.ts';
import { removeRequestHeader, type RequestContext } from '../../pipeline/context.ts';
import { servedVersion, versionedByRequest } from '../../pipeline/endpoints.ts';
import { GatewayError } from '../../pipeline/errors.ts';

/** The upstream a version sets (`override_target`), parsed; undefined when it sets none. */
export function overrideTargetOf(v: VersionInfo | undefined): Target | undefined {
  const raw = v?.override_target?.trim();
  if (raw === undefined || raw === '') return undefined;
  const t = parseTarget(raw);
  // The write-time rule (schemas/rules/endpoints.ts) refuses such a value.
  if (isTargetProblem(t)) throw new Error(`override_target: ${t.message}`);
  return t;
}

/** Every upstream the versions of `api` may send a request to instead of its target. */
export function overrideTargets(api: GatewayApiDefinition): Target[] {
  const versions = versionedByRequest(api)
    ? Object.values(api.version_data?.versions ?? {})
    : [servedVersion(api)];
  return versions.map(overrideTargetOf).filter((t) => t !== undefined);
}

/** Where and how a request names its version, compiled. */
export interface VersionChoice {
  location: 'header' | 'url-param' | 'url' | '';
  /** Header (lower case) or query parameter. */
  key: string;
  defaultVersion: string;
  fallback: boolean;
  strip: boolean;
  pattern: RegExp | undefined;
  versions: ReadonlySet<string>;
}

/** Compiles how `api` (versioned by request) chooses a version. */
export function compileChoice(api: GatewayApiDefinition): VersionChoice {
  const d = api.definition ?? {};
  const location = d.location ?? '';
  const pattern = d.url_versioning_pattern?.trim() ?? '';
  return {
    location,
    key: location === 'header' ? (d.key ?? '').toLowerCase() : (d.key ?? ''),
    defaultVersion: api.version_data?.default_version ?? '',
    fallback: d.fallback_to_default === true,
    strip: d.strip_versioning_data === true || (location === 'url' && d.strip_path === true),
    pattern: pattern === '' ? undefined : new RegExp(`^(?:${pattern})$`),
    versions: new Set(Object.keys(api.version_data?.versions ?? {})),
  };
}

/** The version a request names ('' for none), removing it from the request when asked. */
export function namedVersion(choice: VersionChoice, ctx: RequestContext): string {
  switch (choice.location) {
    case 'header': {
      const v = ctx.headers[choice.key];
      const name = (Array.isArray(v) ? v[0] : v)?.trim() ?? '';
      if (choice.strip) removeRequestHeader(ctx.headers, choice.key);
      return name;
    }
    case 'url-param': {
      const params = new URLSearchParams(ctx.query);
      const name = params.get(choice.key) ?? '';
      if (choice.strip && params.has(choice.key)) {
        params.delete(choice.key);
        const q = params.toString();
        ctx.query = q === '' ? '' : `?${q}`;
      }
      return name;
    }
    case 'url': {
      const lp = ctx.route.listenPath;
      const rest = ctx.path.slice(lp.length);
      const end = rest.indexOf('/', 1);
      const segment = end === -1 ? rest.slice(1) : rest.slice(1, end);
      if (segment === '' || (choice.pattern !== undefined && !choice.pattern.test(segment))) return '';
      if (choice.strip) {
        const left = end === -1 ? '' : rest.slice(end);
        ctx.upstream.path = ctx.route.strip || ctx.listenPathAdded ? left : lp + left;
      }
      return segment;
    }
    default:
      return '';
  }
}

/** See the module comment. */
export const versions: GatewayMiddleware = {
  name: 'versions',
  enabled: (api) => versionedByRequest(api) || overrideTargets(api).length > 0,
  create: (api) => {
    if (!versionedByRequest(api)) {
      const target = overrideTargetOf(servedVersion(api));
      return before((ctx) => {
        ctx.upstream.target = target;
        return undefined;
      });
    }
    const choice = compileChoice(api);
    const targets = new Map<string, Target>();
    for (const [name, v] of Object.entries(api.version_data?.versions ?? {})) {
      const t = overrideTargetOf(v);
      if (t !== undefined) targets.set(name, t);
    }
    return before((ctx) => {
      let name = namedVersion(choice, ctx);
      if (name === '') {
        if (choice.defaultVersion === '') return reject(ctx, GatewayError.versionNotFound());
        name = choice.defaultVersion;
      }
      if (!choice.versions.has(name)) {
        if (!choice.fallback || !choice.versions.has(choice.defaultVersion)) {
          return reject(ctx, GatewayError.versionUnknown());
        }
        name = choice.defaultVersion;
      }
      ctx.state.version = name;
      const target = targets.get(name);
      if (target !== undefined) ctx.upstream.target = target;
      return undefined;
    });
  },
};
