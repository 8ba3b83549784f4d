/**
 * The routing of the parts' HTTP servers (the gateway's management API, the dashboard's API,
 * the webhooks' admission server), all over node:http: an ordered list of routes, each a path
 * pattern whose groups are the parameters and a handler per method; the first route whose
 * pattern matches decides. No framework: the parts answer in their own vocabulary (status
 * bodies, error codes), so the router only says which handler, with which parameters, or why
 * none (docs/design/http.md).
 */

/** One route: a whole-path pattern (anchored; its groups are the parameters) and a handler per method. */
export interface Route<H> {
  path: RegExp;
  methods: Partial<Record<string, H>>;
}

/** The handler type of a route type. */
export type HandlerOf<R> = R extends Route<infer H> ? H : never;

/** What {@link findRoute} found for a request. */
export type RouteMatch<R extends Route<unknown>> =
  /** `groups`: the pattern's groups as they came; {@link decodeParams} decodes them. */
  | { kind: 'found'; route: R; handler: HandlerOf<R>; groups: string[] }
  /** The path is a route's, the method is not: answer 405 with `allow`. */
  | { kind: 'method-not-allowed'; route: R; allow: string[] }
  /** No route has this path: answer 404. */
  | { kind: 'not-found' };

/**
 * The route of `method path` among `routes`, first match wins. `headAsGet`: a HEAD request
 * takes a route's GET handler when it has no HEAD one.
 */
export function findRoute<R extends Route<unknown>>(
  routes: readonly R[],
  method: string,
  path: string,
  opts: { headAsGet?: boolean } = {},
): RouteMatch<R> {
  for (const route of routes) {
    const m = route.path.exec(path);
    if (m === null) continue;
    const methods = route.methods as Partial<Record<string, HandlerOf<R>>>;
    const handler =
      methods[method] ?? (opts.headAsGet === true && method === 'HEAD' ? methods.GET : undefined);
    if (handler === undefined) {
      return { kind: 'method-not-allowed', route, allow: Object.keys(route.methods) };
    }
    return { kind: 'found', route, handler, groups: m.slice(1).map((g: string | undefined) => g ?? '') };
  }
  return { kind: 'not-found' };
}

/**
 * The parameters of a found route, percent-decoded; undefined when one is not valid
 * percent-encoding (answer 404: no resource has that name). Apart from {@link findRoute} so
 * that a part may check the caller first (the dashboard answers 401 before it).
 */
export function decodeParams(groups: readonly string[]): string[] | undefined {
  try {
    return groups.map((g) => decodeURIComponent(g));
  } catch {
    return undefined;
  }
}

/** A path without its trailing slashes (`/a/b/` is `/a/b`; `/` stays). */
export function trimTrailingSlashes(path: string): string {
  let p = path;
  while (p.length > 1 && p.endsWith('/')) p = p.slice(0, -1);
  return p;
}
