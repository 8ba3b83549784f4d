/**
 * Access rights of the session: the API must be in the key's `access_rights` (an empty or
 * missing list grants nothing: we fail closed where the reference gateway grants every API), the
 * API's version in the entry's `versions` (an empty list covers every version), and, when the
 * entry has `allowed_urls`, the method and path must match one of them (GATEWAY-BEHAVIOUR §5).
 *
 * An allowed URL is a regular expression matched from the start of the path, against the path
 * after the listen path (`/anything(.*)` on `/acc/`, as the reference operator's samples write
 * them) and against the whole request path (`/acc/anything(.*)`), whatever `strip_listen_path`
 * says; a version in the URL is part of both (`/v1/anything`). It never matches in the middle of
 * the path: `/admin` does not match `/x/admin` (the reference's prefix matching; its default
 * matches anywhere). Each entry is compiled once per session (sessions are cached): nothing is
 * compiled or sliced per request.
 */
import type { AccessDefinition, GatewayApiDefinition } from '../../../schemas/generated/models.ts';
import { reject } from '../../pipeline/compose.ts';
import { before } from '../../pipeline/steps.ts';
import type { GatewayMiddleware } from '../deps.ts';
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

/** One allowed URL, compiled. */
interface CompiledUrl {
  /** Anchored at the start of the string: tested against the whole request path. */
  whole: RegExp;
  /**
   * Sticky, tested from the end of the listen path (`lastIndex`) so that the path after it is
   * matched without slicing it out; undefined when the pattern could see what comes before that
   * position (a `^` past the leading one, a lookbehind, a word boundary), and `whole` is then
   * tested against the slice instead.
   */
  sticky: RegExp | undefined;
  methods: Set<string>;
}

/** Never matches: an entry stored before its pattern was checked, and not a regular expression. */
const NEVER = /(?!)/y;

/** Patterns that, tested at an offset, could look at the characters before it. */
const LOOKS_BEHIND = /\\[bB]|\(\?<[=!]|\^/;

function compileUrl(url: string, methods: readonly string[] | undefined): CompiledUrl {
  const m = new Set((methods ?? []).map((x) => x.toUpperCase()));
  try {
    // A leading `^` anchors at the start of the path tried: at an offset, the sticky flag does.
    const rest = url.startsWith('^') ? url.slice(1) : url;
    return {
      whole: new RegExp(`^(?:${url})`),
      sticky: LOOKS_BEHIND.test(rest) ? undefined : new RegExp(`(?:${rest})`, 'y'),
      methods: m,
    };
  } catch {
    return { whole: NEVER, sticky: NEVER, methods: new Set() };
  }
}

const compiled = new WeakMap<AccessDefinition, CompiledUrl[]>();

/** The allowed URLs of an access right, compiled once per (cached) session. */
export function allowedUrlsOf(ar: AccessDefinition): CompiledUrl[] {
  let c = compiled.get(ar);
  if (c === undefined) {
    c = (ar.allowed_urls ?? []).map((u) => compileUrl(u.url, u.methods));
    compiled.set(ar, c);
  }
  return c;
}

/**
 * Whether an allowed URL matches `path`, whose first `listenPath` characters are the listen path
 * (`listenPath` 0: the listen path is `/`, and both paths are one).
 */
export function urlMatches(u: CompiledUrl, path: string, listenPath: number): boolean {
  if (u.whole.test(path)) return true;
  if (listenPath === 0) return false;
  // Nothing after the listen path: the path after it is `/`.
  if (path.length === listenPath) return u.whole.test('/');
  if (u.sticky === undefined) return u.whole.test(path.slice(listenPath));
  u.sticky.lastIndex = listenPath;
  return u.sticky.test(path);
}

/** See the module comment. */
export const accessRights: GatewayMiddleware = {
  name: 'access-rights',
  enabled: (api) => api.use_keyless !== true,
  create: (api) => {
    const version = versionOf(api);
    const apiId = api.api_id ?? '';
    return before((ctx) => {
      const ar = ctx.session?.access_rights?.[apiId];
      if (ar === undefined) return reject(ctx, GatewayError.accessDisallowed());
      const versions = ar.versions ?? [];
      if (versions.length > 0 && !versions.includes(ctx.state.version ?? version)) {
        return reject(ctx, GatewayError.accessDisallowed());
      }
      if (ar.allowed_urls !== undefined && ar.allowed_urls.length > 0) {
        const method = ctx.method.toUpperCase();
        const lp = ctx.route.listenPath.length;
        const ok = allowedUrlsOf(ar).some((u) => u.methods.has(method) && urlMatches(u, ctx.path, lp));
        if (!ok) return reject(ctx, GatewayError.resourceDisallowed());
      }
      return undefined;
    });
  },
};
