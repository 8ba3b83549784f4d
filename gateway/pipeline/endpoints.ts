/**
 * What the endpoint middleware (`version_data.versions.<v>.extended_paths`: size limits, endpoint
 * lists, ...) share: the version a request is served by, and endpoint paths compiled once per API
 * into regular expressions matched against the path after the listen path.
 *
 * Endpoint paths are regular expressions with `{name}` parameters (`/users/{id}` matches
 * `/users/42`), anchored at the start and matched up to a segment boundary: `/users` matches
 * `/users` and `/users/42`, never `/usersX` nor `/api/users` (the reference gateway's
 * `enable_path_prefix_matching`; its unanchored default lets `/users` match anywhere in the path).
 */
import type { GatewayApiDefinition, VersionInfo } from '../../schemas/generated/models.ts';
import { endpointPathPattern } from '../../schemas/rules/endpoints.ts';
import type { RequestContext } from './context.ts';
import type { CompiledMiddleware, Middleware } from './middleware.ts';

/**
 * The version that serves every request to an API not versioned by request: the one named by
 * `default_version` (else `Default`), else the only version there is.
 */
export function servedVersion(api: GatewayApiDefinition): VersionInfo | undefined {
  const versions = api.version_data?.versions;
  if (versions === undefined) return undefined;
  const name = api.version_data?.default_version;
  const named = versions[name === undefined || name === '' ? 'Default' : name];
  if (named !== undefined) return named;
  const all = Object.values(versions);
  return all.length === 1 ? all[0] : undefined;
}

/**
 * Whether `api` chooses its version per request (`version_data.not_versioned: false`; the
 * middleware/versions step then names it in `ctx.state.version`).
 */
export function versionedByRequest(api: GatewayApiDefinition): boolean {
  return api.version_data?.not_versioned === false;
}

/** The versions that may serve a request to `api`: every version, or the one served. */
export function servingVersions(api: GatewayApiDefinition): VersionInfo[] {
  if (versionedByRequest(api)) return Object.values(api.version_data?.versions ?? {});
  const v = servedVersion(api);
  return v === undefined ? [] : [v];
}

/**
 * `compile` run once per version that may serve `api`; returns the lookup of a request's
 * compiled value (its chosen version's, or the one served), or undefined when no version
 * compiles to anything (the middleware is then left out).
 */
export function perVersion<T>(
  api: GatewayApiDefinition,
  compile: (v: VersionInfo) => T | undefined,
): ((ctx: RequestContext) => T | undefined) | undefined {
  if (!versionedByRequest(api)) {
    const v = servedVersion(api);
    const one = v === undefined ? undefined : compile(v);
    return one === undefined ? undefined : () => one;
  }
  const byName = new Map<string, T>();
  for (const [name, v] of Object.entries(api.version_data?.versions ?? {})) {
    const c = compile(v);
    if (c !== undefined) byName.set(name, c);
  }
  if (byName.size === 0) return undefined;
  return (ctx) => (ctx.state.version === undefined ? undefined : byName.get(ctx.state.version));
}

/** The request path after the listen path (`/` when nothing is left). */
export function endpointPath(ctx: RequestContext): string {
  return ctx.path.slice(ctx.route.listenPath.length) || '/';
}

/**
 * Compiles an endpoint path (see the module comment). Throws, naming the path, when it is not a
 * regular expression: the definition is then left out of the table, never served without it.
 */
export function compileEndpointPath(path: string, ignoreCase: boolean): RegExp {
  try {
    return new RegExp(endpointPathPattern(path), ignoreCase ? 'i' : '');
  } catch (err) {
    throw new Error(`endpoint path ${JSON.stringify(path)} is not a regular expression: ${String(err)}`, {
      cause: err,
    });
  }
}

/** An endpoint compiled once: its path and the methods it covers (none: every method). */
export interface CompiledEndpoint {
  re: RegExp;
  /** Upper-case methods; empty covers every method. */
  methods: ReadonlySet<string>;
}

/** Compiles one endpoint entry. */
export function compileEndpoint(
  path: string,
  methods: readonly string[],
  ignoreCase: boolean,
): CompiledEndpoint {
  return {
    re: compileEndpointPath(path, ignoreCase),
    methods: new Set(methods.filter((m) => m !== '').map((m) => m.toUpperCase())),
  };
}

/** Compiles the endpoint of a model entry: its `path`, and its one `method` (none: every method). */
export function compileEntryEndpoint(
  e: { path?: string | undefined; method?: string | undefined },
  ignoreCase: boolean,
): CompiledEndpoint {
  return compileEndpoint(e.path ?? '', e.method === undefined ? [] : [e.method], ignoreCase);
}

/** Whether a compiled endpoint covers `method` (upper case) on `path` (after the listen path). */
export function endpointMatches(e: CompiledEndpoint, method: string, path: string): boolean {
  return (e.methods.size === 0 || e.methods.has(method)) && e.re.test(path);
}

/** What an `extended_paths` entry has: its path, its one method (none: every method), and a switch. */
export interface EndpointEntry {
  path?: string | undefined;
  method?: string | undefined;
  disabled?: boolean | undefined;
}

/** Entries of an endpoint list, compiled: what each says (`T`) with its endpoint. */
export type EndpointTable<T> = (T & { endpoint: CompiledEndpoint })[];

/**
 * The entries of one `extended_paths` list of `v` that apply (not disabled, with a path): what
 * `make` gives for each (undefined: the entry is left out) with the entry's endpoint, compiled in
 * the version's case after `make`. Undefined when none is left (the middleware is then left out).
 */
export function compileEndpointEntries<E extends EndpointEntry, T extends object>(
  v: VersionInfo,
  list: readonly E[] | undefined,
  make: (e: E & { path: string }) => T | undefined,
): EndpointTable<T> | undefined {
  const ignoreCase = v.ignore_endpoint_case === true;
  const out: EndpointTable<T> = [];
  for (const e of list ?? []) {
    if (e.disabled === true || e.path === undefined || e.path === '') continue;
    const made = make(e as E & { path: string });
    if (made !== undefined) out.push({ ...made, endpoint: compileEntryEndpoint(e, ignoreCase) });
  }
  return out.length === 0 ? undefined : out;
}

/** The first of `list` whose endpoint covers the request's method and path (after the listen path). */
export function matchingEntry<T extends { endpoint: CompiledEndpoint }>(
  list: readonly T[] | undefined,
  ctx: RequestContext,
): T | undefined {
  if (list === undefined) return undefined;
  const method = ctx.method.toUpperCase();
  const path = endpointPath(ctx);
  return list.find((e) => endpointMatches(e.endpoint, method, path));
}

/**
 * A middleware of a table compiled per version (`compile`, run through `perVersion`): enabled
 * where a version that may serve the API compiles to one; `create` makes its step from the
 * lookup of a request's table. `what` names the table in the error of a middleware created where
 * it is not enabled.
 */
export function perVersionMiddleware<Deps, T>(
  name: string,
  what: string,
  compile: (v: VersionInfo) => T | undefined,
  create: (
    of: (ctx: RequestContext) => T | undefined,
    deps: Deps,
    api: GatewayApiDefinition,
  ) => CompiledMiddleware,
): Middleware<Deps> {
  return {
    name,
    enabled: (api) => perVersion(api, compile) !== undefined,
    create: (api, deps) => {
      const of = perVersion(api, compile);
      if (of === undefined) throw new Error(`${name}: compiled for an API without ${what}`);
      return create(of, deps, api);
    },
  };
}
