/**
 * Access rights of the session: the API must be in the key's `access_rights` (an empty or
 * missing list grants nothing: we fail closed where the reference gateway grants every API), the
 * API's version in the entry's `versions` (an empty list covers every version), and, when the
 * entry has `allowed_urls`, the method and path must match one of them: the URL is a regular
 * expression matched from the start of the request path, compiled once per session entry.
 */
import type { AccessDefinition, GatewayApiDefinition } from '../../../schemas/generated/models.ts';
import { reject, type Middleware } from '../../pipeline/compose.ts';
import { GatewayError } from '../../pipeline/errors.ts';

/**
 * The version name of a request to `api` not versioned by request (else the chosen version,
 * `ctx.state.version`, is checked): `Default` for a classic API, `""` for an OAS API.
 */
export function versionOf(api: GatewayApiDefinition): string {
  if (api.is_oas === true) return '';
  const d = api.version_data?.default_version;
  return d === undefined || d === '' ? 'Default' : d;
}

interface CompiledUrl {
  re: RegExp;
  methods: Set<string>;
}

const compiled = new WeakMap<AccessDefinition, CompiledUrl[]>();

/** The allowed URLs of an access right, compiled once per (cached) session. */
export function allowedUrlsOf(ar: AccessDefinition): CompiledUrl[] {
  let c = compiled.get(ar);
  if (c === undefined) {
    c = (ar.allowed_urls ?? []).map((u) => ({
      re: new RegExp(`^(?:${u.url})`),
      methods: new Set((u.methods ?? []).map((m) => m.toUpperCase())),
    }));
    compiled.set(ar, c);
  }
  return c;
}

/** See the module comment. */
export const accessRights: Middleware = {
  name: 'access-rights',
  enabled: (api) => api.use_keyless !== true,
  create: (api) => {
    const version = versionOf(api);
    const apiId = api.api_id ?? '';
    return {
      before: (ctx) => {
        const ar = ctx.session?.access_rights?.[apiId];
        if (ar === undefined) return reject(ctx, GatewayError.accessDisallowed());
        const versions = ar.versions ?? [];
        if (versions.length > 0 && !versions.includes(ctx.state.version ?? version)) {
          return reject(ctx, GatewayError.accessDisallowed());
        }
        if (ar.allowed_urls !== undefined && ar.allowed_urls.length > 0) {
          const method = ctx.method.toUpperCase();
          const ok = allowedUrlsOf(ar).some((u) => u.methods.has(method) && u.re.test(ctx.path));
          if (!ok) return reject(ctx, GatewayError.resourceDisallowed());
        }
        return undefined;
      },
    };
  },
};
