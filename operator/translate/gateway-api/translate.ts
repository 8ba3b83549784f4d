/**
 * A Gateway and its HTTPRoutes -> the ApiDefinitions that serve them (pure, golden-tested), and
 * the status the spec asks of each.
 *
 * Requests are routed by the gateway's own table: one API per listener port, host and path
 * match. Where several rule matches share a port, host and path and differ by method, headers or
 * query parameters, that API dispatches (URL rewrite triggers, in the spec's precedence) to an
 * internal API per rule (`svc://<api_id>`), which carries the rule's filters and backends; a
 * request no match takes goes on to the next path that covers it (then a 404). A route naming
 * something the gateway cannot serve as the spec says is refused (Accepted=False,
 * UnsupportedValue) with the field named, never served without it.
 */
import { createHash } from 'node:crypto';
import type {
  ApiDefinitionSpec,
  RoutingTrigger,
  URLRewriteMeta,
  VersionInfo,
} from '../../../schemas/generated/kinds.ts';
import { resolveBackend, weightedTargets, type BackendProblem, type ResolvedBackend } from './backends.ts';
import { escapeRegex, ruleBehaviour, type Unsupported } from './filters.ts';
import {
  intersectHostnames,
  listenersOf,
  namesGateway,
  namespaceAllowed,
  type ServedListener,
} from './listeners.ts';
import {
  GATEWAY_GROUP,
  type Condition,
  type GatewayInput,
  type GatewayTranslation,
  type GatewayTranslationContext,
  type GeneratedApi,
  type HttpRouteInput,
  type RouteMatch,
  type RouteParentStatus,
  type RouteRule,
  type ValueMatch,
} from './types.ts';

/** One match of one rule, where it is served: a listener port, a host and a path. */
interface Candidate {
  route: HttpRouteInput;
  routeKey: string;
  ruleIndex: number;
  matchIndex: number;
  rule: RouteRule;
  match: RouteMatch;
  listener: ServedListener;
  domain: string;
  /** The listen path (`/` for every path; no trailing slash otherwise). */
  path: string;
  exact: boolean;
  /** A RegularExpression path match: the whole request path must match it (under `path`). */
  regex: string | undefined;
  backends: (ResolvedBackend | BackendProblem)[];
}

/** A group of candidates the gateway's table routes to one API. */
interface Group {
  port: number;
  listener: ServedListener;
  domain: string;
  path: string;
  exact: boolean;
  candidates: Candidate[];
  /** The API clients reach for this group (its ID). */
  apiId: string;
}

const cond = (type: string, status: boolean, reason: string, message: string): Condition => ({
  type,
  status: status ? 'True' : 'False',
  reason,
  message,
});

/** A stable gateway ID of a generated API: a hash of what it serves. */
export function gatewayApiId(gateway: GatewayInput, ...parts: (string | number)[]): string {
  const text = [gateway.metadata.namespace, gateway.metadata.name, ...parts.map(String)].join('\n');
  return `gwapi-${createHash('sha256').update(text).digest('hex').slice(0, 32)}`;
}

/** The resource name of a generated API: the Gateway's name and a part of its ID (at most 253). */
export function gatewayApiName(gatewayName: string, apiId: string): string {
  return `${gatewayName.slice(0, 253 - 13)}-${apiId.slice('gwapi-'.length, 'gwapi-'.length + 12)}`;
}

const creation = (r: HttpRouteInput): number => {
  const t = r.metadata.creationTimestamp;
  return t === undefined ? 0 : new Date(t).getTime();
};

/** Routes in the spec's order of precedence for ties: oldest first, then by namespace and name. */
function byAge(a: HttpRouteInput, b: HttpRouteInput): number {
  const ka = `${a.metadata.namespace}/${a.metadata.name}`;
  const kb = `${b.metadata.namespace}/${b.metadata.name}`;
  return creation(a) - creation(b) || (ka < kb ? -1 : ka > kb ? 1 : 0);
}

/**
 * The listen path a regular expression's matches all lie under: its literal start (letters,
 * digits, `/`, `-`, `_`, `~`, `%`; a character a quantifier makes optional left out) cut back to
 * its last `/`, as a prefix covers whole segments; `/` when it has an alternative (`|`) or does
 * not start with a literal `/`.
 */
export function regexListenPath(regex: string): string {
  const body = regex.replace(/^\^/, '');
  if (body.includes('|')) return '/';
  let literal = /^[A-Za-z0-9/_~%-]*/.exec(body)?.[0] ?? '';
  if (/^[?*{]/.test(body.slice(literal.length))) literal = literal.slice(0, -1);
  const cut = literal.slice(0, literal.lastIndexOf('/'));
  return cut.startsWith('/') ? cut : '/';
}

/** The path match of a match, or the problem with it. */
function pathOf(
  match: RouteMatch,
  at: string,
): { path: string; exact: boolean; regex?: string } | Unsupported {
  const type = match.path?.type ?? 'PathPrefix';
  const value = match.path?.value ?? '/';
  if (type === 'RegularExpression') {
    try {
      new RegExp(value);
    } catch {
      return { message: `${at}.path.value: Invalid value: "${value}": not a regular expression` };
    }
    return { path: regexListenPath(value), exact: false, regex: value };
  }
  if (!value.startsWith('/') || /[?#]|\/\/|\/\.\.?(\/|$)/.test(value)) {
    return {
      message: `${at}.path.value: Invalid value: "${value}": an absolute path without query, "//", "." or ".." segments`,
    };
  }
  if (type === 'Exact') return { path: value, exact: true };
  const trimmed = value.replace(/\/+$/, '');
  return { path: trimmed === '' ? '/' : trimmed, exact: false };
}

const matchRx = (m: ValueMatch): string =>
  (m.type ?? 'Exact') === 'Exact' ? `^${escapeRegex(m.value)}$` : m.value;
/** Whether a match holds for some requests of its path only (not for a method alone). */
const isConditional = (c: Candidate): boolean =>
  c.regex !== undefined || (c.match.headers ?? []).length > 0 || (c.match.queryParams ?? []).length > 0;

/**
 * The spec's precedence of matches on one path: a regular expression of the path first (it is
 * the more specific path match; the spec leaves its rank to implementations), then a method,
 * more headers, more query parameters, then age.
 */
function byPrecedence(a: Candidate, b: Candidate): number {
  return (
    Number(b.regex !== undefined) - Number(a.regex !== undefined) ||
    Number(b.match.method !== undefined) - Number(a.match.method !== undefined) ||
    (b.match.headers ?? []).length - (a.match.headers ?? []).length ||
    (b.match.queryParams ?? []).length - (a.match.queryParams ?? []).length ||
    byAge(a.route, b.route) ||
    a.ruleIndex - b.ruleIndex ||
    a.matchIndex - b.matchIndex
  );
}

/** Whether prefix `q` (a listen path) covers path `p` on whole segments. */
const covers = (q: string, p: string): boolean => q === '/' || p === q || p.startsWith(`${q}/`);

/** The hosts whose APIs a request for `domain` may go on to, most specific first (`''`: any host). */
function coveringDomains(domain: string, all: readonly string[]): string[] {
  const out = [domain];
  const wild = all
    .filter(
      (d) =>
        d.startsWith('*.') && d !== domain && domain.endsWith(d.slice(1)) && domain.length > d.length - 1,
    )
    .sort((a, b) => b.length - a.length);
  out.push(...wild);
  if (domain !== '') out.push('');
  return out;
}

/**
 * A Gateway with the HTTPRoutes that may name it -> the APIs that serve them and the status of
 * the Gateway, its listeners and each route's parents naming it. Pure: the same input gives the
 * same output.
 */
export function translateGateway(
  gateway: GatewayInput,
  routes: readonly HttpRouteInput[],
  ctx: GatewayTranslationContext,
): GatewayTranslation {
  const gwNs = gateway.metadata.namespace;
  const listeners = listenersOf(gateway, ctx);
  const attached = new Map<string, Set<string>>();
  const candidates: Candidate[] = [];
  const statuses: Record<string, RouteParentStatus[]> = {};

  for (const route of [...routes].sort(byAge)) {
    const routeKey = `${route.metadata.namespace}/${route.metadata.name}`;
    const parents: RouteParentStatus[] = [];
    (route.spec.parentRefs ?? []).forEach((ref) => {
      if (!namesGateway(ref, route, gateway)) return;
      // As written (the group and kind as the API server defaults them): clients compare it with theirs.
      const parentRef = { group: GATEWAY_GROUP, kind: 'Gateway', ...ref };
      const named = listeners.filter(
        (l) =>
          (ref.sectionName === undefined || ref.sectionName === l.listener.name) &&
          (ref.port === undefined || ref.port === l.listener.port),
      );
      const resolved = cond('ResolvedRefs', true, 'ResolvedRefs', 'every backend is resolved');
      const refuse = (reason: string, message: string): void => {
        parents.push({ parentRef, conditions: [cond('Accepted', false, reason, message), resolved] });
      };
      if (named.length === 0) {
        refuse(
          'NoMatchingParent',
          ref.sectionName !== undefined
            ? `the Gateway has no listener named "${ref.sectionName}"${ref.port === undefined ? '' : ` on port ${ref.port}`}`
            : `the Gateway has no listener on port ${ref.port ?? ''}`,
        );
        return;
      }
      const allowed = named.filter(
        (l) => l.usable && namespaceAllowed(l.listener, gwNs, route.metadata.namespace, ctx),
      );
      if (allowed.length === 0) {
        refuse(
          'NotAllowedByListeners',
          'no listener of the Gateway lets this route attach (allowedRoutes, protocol, or invalid)',
        );
        return;
      }
      const hosted = allowed.flatMap((l) => {
        const hosts = intersectHostnames(l.listener.hostname, route.spec.hostnames ?? []);
        return hosts === undefined ? [] : [{ l, hosts }];
      });
      if (hosted.length === 0) {
        refuse('NoMatchingListenerHostname', "none of the route's hostnames is one of the listeners'");
        return;
      }
      // What the rules ask, on every listener and host they are served on.
      const unsupported: Unsupported[] = [];
      const mine: Candidate[] = [];
      const backendsOf = new Map<number, (ResolvedBackend | BackendProblem)[]>();
      const mirrorProblems: BackendProblem[] = [];
      (route.spec.rules ?? []).forEach((rule, r) => {
        const at = `spec.rules[${r}]`;
        backendsOf.set(
          r,
          (rule.backendRefs ?? []).map((b, i) =>
            resolveBackend(b, route.metadata.namespace, `${at}.backendRefs[${i}]`, ctx),
          ),
        );
        (rule.filters ?? []).forEach((f, i) => {
          if (f.type !== 'RequestMirror' || f.requestMirror === undefined) return;
          const m = resolveBackend(
            f.requestMirror.backendRef,
            route.metadata.namespace,
            `${at}.filters[${i}].requestMirror.backendRef`,
            ctx,
          );
          if ('reason' in m) mirrorProblems.push(m);
        });
        const matches = rule.matches === undefined || rule.matches.length === 0 ? [{}] : rule.matches;
        matches.forEach((match: RouteMatch, m) => {
          const mAt = `${at}.matches[${m}]`;
          const p = pathOf(match, mAt);
          if ('message' in p) {
            unsupported.push(p);
            return;
          }
          for (const [field, list] of [
            ['headers', match.headers],
            ['queryParams', match.queryParams],
          ] as const) {
            (list ?? []).forEach((v, i) => {
              if (v.type === 'RegularExpression') {
                try {
                  new RegExp(v.value);
                } catch {
                  unsupported.push({
                    message: `${mAt}.${field}[${i}].value: Invalid value: not a regular expression`,
                  });
                }
              }
            });
          }
          for (const { l, hosts } of hosted) {
            for (const domain of hosts) {
              const scope = {
                scheme: l.scheme,
                port: l.listener.port,
                host: domain === '' || domain.startsWith('*.') ? undefined : domain,
                path: { exact: p.exact, value: p.path },
              };
              // Checked here for what it says; built again per API below.
              ruleBehaviour(rule, at, scope, unsupported);
              mine.push({
                route,
                routeKey,
                ruleIndex: r,
                matchIndex: m,
                rule,
                match,
                listener: l,
                domain,
                path: p.path,
                exact: p.exact,
                regex: p.regex,
                backends: [],
              });
            }
          }
        });
      });
      const problems = [...new Set(unsupported.map((u) => u.message))];
      if (problems.length > 0) {
        refuse('UnsupportedValue', problems.join('; '));
        return;
      }
      for (const c of mine) c.backends = backendsOf.get(c.ruleIndex) ?? [];
      candidates.push(...mine);
      for (const { l } of hosted) {
        const set = attached.get(l.listener.name) ?? new Set<string>();
        set.add(routeKey);
        attached.set(l.listener.name, set);
      }
      const backendProblems = [
        ...[...backendsOf.values()].flat().filter((b): b is BackendProblem => 'reason' in b),
        ...mirrorProblems,
      ];
      const first = backendProblems[0];
      parents.push({
        parentRef,
        conditions: [
          cond(
            'Accepted',
            true,
            'Accepted',
            `served on listener${hosted.length > 1 ? 's' : ''} ${hosted.map((h) => h.l.listener.name).join(', ')}`,
          ),
          first === undefined
            ? resolved
            : cond('ResolvedRefs', false, first.reason, backendProblems.map((b) => b.message).join('; ')),
        ],
      });
    });
    if (parents.length > 0) statuses[routeKey] = parents;
  }

  const apis = buildApis(gateway, candidates, ctx);
  const accepted = listeners.filter((l) => l.conditions[0]?.status === 'True').length;
  const addresses = gateway.spec.addresses ?? [];
  const conditions: Condition[] = [
    addresses.length > 0
      ? cond(
          'Accepted',
          false,
          'UnsupportedAddress',
          'spec.addresses: Unsupported value: svc serves on the addresses of its gateway',
        )
      : accepted === listeners.length
        ? cond('Accepted', true, 'Accepted', 'the Gateway is served')
        : cond(
            'Accepted',
            accepted > 0,
            'ListenersNotValid',
            `${listeners.length - accepted} of ${listeners.length} listeners are not served`,
          ),
  ];
  return {
    apis,
    conditions,
    listeners: listeners.map((l) => ({
      name: l.listener.name,
      supportedKinds:
        l.listener.protocol === 'HTTP' || l.listener.protocol === 'HTTPS'
          ? [{ group: GATEWAY_GROUP, kind: 'HTTPRoute' }]
          : [],
      attachedRoutes: attached.get(l.listener.name)?.size ?? 0,
      conditions: l.conditions,
    })),
    routes: statuses,
  };
}

/** The APIs of the candidates: per port, host and path, a served API; internal ones where it dispatches. */
function buildApis(
  gateway: GatewayInput,
  candidates: Candidate[],
  ctx: GatewayTranslationContext,
): GeneratedApi[] {
  const groups = new Map<string, Group>();
  for (const c of candidates) {
    const port = c.listener.listener.port;
    const key = `${port} ${c.domain} ${c.exact ? '=' : '^'}${c.path.toLowerCase()}`;
    let g = groups.get(key);
    if (!g) {
      g = {
        port,
        listener: c.listener,
        domain: c.domain,
        path: c.path,
        exact: c.exact,
        candidates: [],
        apiId: gatewayApiId(gateway, 'group', port, c.domain, c.exact ? 'Exact' : 'PathPrefix', c.path),
      };
      groups.set(key, g);
    }
    g.candidates.push(c);
  }
  const apis = new Map<string, GeneratedApi>();
  const add = (spec: ApiDefinitionSpec): void => {
    const id = spec.api_id ?? '';
    if (!apis.has(id)) apis.set(id, { name: gatewayApiName(gateway.metadata.name, id), spec });
  };
  const gwName = `${gateway.metadata.namespace}/${gateway.metadata.name}`;
  const notFoundId = gatewayApiId(gateway, 'not-found');
  const errorId = gatewayApiId(gateway, 'no-backend');
  const answering = (id: string, code: number, what: string): ApiDefinitionSpec => ({
    api_id: id,
    name: `${gwName} ${what}`,
    use_keyless: true,
    active: true,
    internal: true,
    proxy: { listen_path: '/', target_url: 'http://127.0.0.1:9', strip_listen_path: false },
    version_data: {
      not_versioned: true,
      versions: {
        Default: {
          name: 'Default',
          use_extended_paths: true,
          extended_paths: {
            mock_response: [
              {
                path: '/',
                code,
                body: code === 404 ? '{"error":"Not Found"}' : '{"error":"no backend to serve this route"}',
                headers: { 'content-type': 'application/json' },
              },
            ],
          },
        },
      },
    },
  });
  // Set by the closures below (an object: the checker does not follow assignments in closures).
  const uses = { notFound: false, error: false };
  const allDomains = [...new Set([...groups.values()].map((g) => g.domain))];

  /** The API a request of group `g` goes on to when none of its matches takes it, as a rewrite target. */
  const fallbackOf = (g: Group): string => {
    for (const domain of coveringDomains(g.domain, allDomains)) {
      const covering = [...groups.values()]
        .filter(
          (q) =>
            q !== g &&
            q.port === g.port &&
            q.domain === domain &&
            !q.exact &&
            covers(q.path, g.path) &&
            (domain !== g.domain || q.path !== g.path || g.exact),
        )
        .sort((a, b) => b.path.length - a.path.length)[0];
      if (covering) {
        const rel = (g.path === '/' ? '' : g.path).slice(covering.path === '/' ? 0 : covering.path.length);
        return `svc://${covering.apiId}${rel}/$1`;
      }
    }
    uses.notFound = true;
    return `svc://${notFoundId}/`;
  };

  /** The spec of the API serving one rule, at a group's listener, host and path. */
  const ruleApi = (g: Group, c: Candidate, id: string, internal: boolean): ApiDefinitionSpec => {
    const l = g.listener;
    const problems: Unsupported[] = [];
    const behaviour = ruleBehaviour(
      c.rule,
      `spec.rules[${c.ruleIndex}]`,
      {
        scheme: l.scheme,
        port: g.port,
        host: g.domain === '' || g.domain.startsWith('*.') ? undefined : g.domain,
        path: { exact: g.exact, value: g.path },
      },
      problems,
    );
    let proxyTarget: Pick<
      NonNullable<ApiDefinitionSpec['proxy']>,
      'target_url' | 'enable_load_balancing' | 'target_list'
    >;
    if (behaviour.redirects) {
      uses.notFound = true;
      proxyTarget = { target_url: `svc://${notFoundId}/` };
    } else {
      const unavailable = `svc://${errorId}/`;
      const resolved = c.backends.map((b) => ('reason' in b ? { weight: weightOf(c, b), targets: [] } : b));
      const list = weightedTargets(resolved, unavailable);
      if (list.length === 0 || list.includes(unavailable)) uses.error = true;
      const distinct = [...new Set(list)];
      proxyTarget =
        list.length === 0
          ? { target_url: unavailable }
          : distinct.length === 1
            ? { target_url: distinct[0] }
            : { target_url: '', enable_load_balancing: true, target_list: list };
    }
    // Each mirror: its one address, or the Service's cluster name when it has several (one copy
    // per request, spread by the cluster); one not resolved (its status says so) or without a
    // ready endpoint mirrors nothing.
    const mirrorTargets = behaviour.mirrors.flatMap(({ ref, at }) => {
      const m = resolveBackend(ref, c.route.metadata.namespace, at, ctx);
      if ('reason' in m || m.targets.length === 0) return [];
      if (m.targets.length === 1) return m.targets;
      return [`http://${ref.name}.${ref.namespace ?? c.route.metadata.namespace}.svc:${ref.port ?? 80}`];
    });
    const route = `${c.routeKey} rules[${c.ruleIndex}]`;
    const onGatewayPort = l.scheme === 'http' && g.port === ctx.gatewayPort;
    const version: VersionInfo = behaviour.version;
    return {
      api_id: id,
      name: `${gwName} ${route} ${l.scheme}://${g.domain || '*'}${g.path}${g.exact ? ' (exact)' : ''}`,
      use_keyless: true,
      active: true,
      ...(behaviour.contextVars ? { enable_context_vars: true } : {}),
      ...(internal
        ? { internal: true }
        : {
            ...(onGatewayPort ? {} : { protocol: l.scheme, listen_port: g.port }),
            ...(g.domain === '' ? {} : { domain: g.domain }),
            ...(l.secrets.length > 0 ? { certificate_secret_names: [...l.secrets] } : {}),
          }),
      proxy: {
        listen_path: g.path,
        ...(g.exact && !internal ? { listen_path_exact: true } : {}),
        ...proxyTarget,
        strip_listen_path: false,
        ...(behaviour.preserveHost ? { preserve_host_header: true } : {}),
        ...(mirrorTargets.length > 0 && !behaviour.redirects
          ? {
              mirror_targets: mirrorTargets,
              ...(behaviour.mirrorPercent < 100 ? { mirror_percent: behaviour.mirrorPercent } : {}),
            }
          : {}),
      },
      version_data: { not_versioned: true, versions: { Default: version } },
    };
  };

  for (const g of groups.values()) {
    g.candidates.sort(byPrecedence);
    const [first] = g.candidates;
    if (first === undefined) continue;
    if (first.match.method === undefined && !isConditional(first)) {
      // Every request of the group takes its first match: that rule's API is the group's.
      add(ruleApi(g, first, g.apiId, false));
      continue;
    }
    // Dispatch: per method, the conditional matches in order, then the first that takes every request.
    const ruleIdOf = (c: Candidate): string =>
      gatewayApiId(
        gateway,
        'rule',
        g.port,
        g.domain,
        g.exact ? 'Exact' : 'PathPrefix',
        g.path,
        c.routeKey,
        c.ruleIndex,
      );
    const to = (c: Candidate): string => {
      const id = ruleIdOf(c);
      add(ruleApi(g, c, id, true));
      return `svc://${id}/$1`;
    };
    const fallback = fallbackOf(g);
    const entry = (method: URLRewriteMeta['method']): URLRewriteMeta => {
      const triggers: RoutingTrigger[] = [];
      let rewrite = fallback;
      for (const c of g.candidates) {
        if (c.match.method !== undefined && c.match.method !== method) continue;
        if (!isConditional(c)) {
          rewrite = to(c);
          break;
        }
        const header_matches = Object.fromEntries(
          (c.match.headers ?? []).map((h) => [h.name.toLowerCase(), { match_rx: matchRx(h) }]),
        );
        const query_val_matches = Object.fromEntries(
          (c.match.queryParams ?? []).map((q) => [q.name, { match_rx: matchRx(q) }]),
        );
        triggers.push({
          on: 'all',
          options: {
            ...(Object.keys(header_matches).length > 0 ? { header_matches } : {}),
            ...(Object.keys(query_val_matches).length > 0 ? { query_val_matches } : {}),
            // The whole request path (`$tyk_context.path`, hence enable_context_vars).
            ...(c.regex === undefined
              ? {}
              : { request_context_matches: { path: { match_rx: `^(?:${c.regex})$` } } }),
          },
          rewrite_to: to(c),
        });
      }
      return {
        path: '/',
        ...(method === undefined ? {} : { method }),
        match_pattern: '^/?(.*)$',
        rewrite_to: rewrite,
        ...(triggers.length > 0 ? { triggers } : {}),
      };
    };
    const methods = [
      ...new Set(
        g.candidates.flatMap((c) =>
          c.match.method === undefined ? [] : [c.match.method as URLRewriteMeta['method']],
        ),
      ),
    ].sort();
    const l = g.listener;
    const onGatewayPort = l.scheme === 'http' && g.port === ctx.gatewayPort;
    uses.notFound = true;
    add({
      api_id: g.apiId,
      name: `${gwName} ${l.scheme}://${g.domain || '*'}${g.path}${g.exact ? ' (exact)' : ''}`,
      use_keyless: true,
      active: true,
      ...(g.candidates.some((c) => c.regex !== undefined) ? { enable_context_vars: true } : {}),
      ...(onGatewayPort ? {} : { protocol: l.scheme, listen_port: g.port }),
      ...(g.domain === '' ? {} : { domain: g.domain }),
      ...(l.secrets.length > 0 ? { certificate_secret_names: [...l.secrets] } : {}),
      proxy: {
        listen_path: g.path,
        ...(g.exact ? { listen_path_exact: true } : {}),
        target_url: `svc://${notFoundId}/`,
        strip_listen_path: false,
      },
      version_data: {
        not_versioned: true,
        versions: {
          Default: {
            name: 'Default',
            use_extended_paths: true,
            extended_paths: { url_rewrites: [...methods.map((m) => entry(m)), entry(undefined)] },
          },
        },
      },
    });
  }
  if (uses.notFound) add(answering(notFoundId, 404, 'not found'));
  if (uses.error) add(answering(errorId, 500, 'no backend'));
  return [...apis.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** The weight of a backendRef that did not resolve (its share of requests gets 500). */
function weightOf(c: Candidate, b: BackendProblem): number {
  const i = c.backends.indexOf(b);
  return c.rule.backendRefs?.[i]?.weight ?? 1;
}
