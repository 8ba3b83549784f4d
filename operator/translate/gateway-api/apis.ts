/**
 * The candidates of a Gateway's routes -> the ApiDefinitions that serve them: per listener port,
 * host and path one API clients reach; where several matches share it and differ by method,
 * headers or query parameters, that API dispatches (URL rewrite triggers, in the spec's
 * precedence) to an internal API per rule, and a request no match takes goes on to the next path
 * that covers it (then a 404). Part of translate.ts (the whole).
 */
import { createHash } from 'node:crypto';
import type {
  ApiDefinitionSpec,
  ExtendedPathsSet,
  RoutingTrigger,
  URLRewriteMeta,
  VersionInfo,
} from '../../../schemas/generated/kinds.ts';
import { resolveBackend, weightedTargets, type BackendProblem } from './backends.ts';
import { escapeRegex, ruleBehaviour, type Unsupported } from './filters.ts';
import type { ServedListener } from './listeners.ts';
import { policiesByTarget, policyFor } from './policies.ts';
import { byAge, type Candidate } from './routes.ts';
import type { GatewayInput, GatewayTranslationContext, GeneratedApi, ValueMatch } from './types.ts';

/** The version data of an API with one version, Default, doing what `extended_paths` says. */
const oneVersion = (extended_paths: ExtendedPathsSet): NonNullable<ApiDefinitionSpec['version_data']> => ({
  not_versioned: true,
  versions: { Default: { name: 'Default', use_extended_paths: true, extended_paths } },
});

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

/** A stable gateway ID of a generated API: a hash of what it serves. */
export function gatewayApiId(gateway: GatewayInput, ...parts: (string | number)[]): string {
  const text = [gateway.metadata.namespace, gateway.metadata.name, ...parts.map(String)].join('\n');
  return `gwapi-${createHash('sha256').update(text).digest('hex').slice(0, 32)}`;
}

/** The resource name of a generated API: the Gateway's name and a part of its ID (at most 253). */
export function gatewayApiName(gatewayName: string, apiId: string): string {
  return `${gatewayName.slice(0, 253 - 13)}-${apiId.slice('gwapi-'.length, 'gwapi-'.length + 12)}`;
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

/** The APIs of the candidates: per port, host and path, a served API; internal ones where it dispatches. */
export function buildApis(
  gateway: GatewayInput,
  candidates: Candidate[],
  ctx: GatewayTranslationContext,
): GeneratedApi[] {
  const groups = new Map<string, Group>();
  for (const c of candidates) {
    const port = c.listener.listener.port;
    // Per-Gateway addresses: a listener port with no gateway port allocated is not served.
    if (ctx.ownPorts !== undefined && ctx.ownPorts[port] === undefined) continue;
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
  /** Adds an API once, with the routes it serves (more routes named later are added to it). */
  const add = (spec: ApiDefinitionSpec, routes: readonly string[] = []): void => {
    const id = spec.api_id ?? '';
    const have = apis.get(id);
    if (!have) apis.set(id, { name: gatewayApiName(gateway.metadata.name, id), spec, routes: [] });
    const api = apis.get(id);
    if (api) api.routes = [...new Set([...api.routes, ...routes])].sort();
  };
  /** The routes with a match in a group: its public API serves each of them. */
  const routesOf = (g: Group): string[] => g.candidates.map((c) => c.routeKey);
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
    version_data: oneVersion({
      mock_response: [
        // HEAD: the status alone (a JSON content type without its body misleads clients).
        { path: '/', method: 'HEAD', code },
        {
          path: '/',
          code,
          body: code === 404 ? '{"error":"Not Found"}' : '{"error":"no backend to serve this route"}',
          headers: { 'content-type': 'application/json' },
        },
      ],
    }),
  });
  // Set by the closures below (an object: the checker does not follow assignments in closures).
  const uses = { notFound: false, error: false };
  const allDomains = [...new Set([...groups.values()].map((g) => g.domain))];
  const byTarget = policiesByTarget(ctx.policies ?? []);

  /** The API a request of group `g` goes on to when none of its matches takes it, as a rewrite target. */
  const fallbackOf = (g: Group, bare = g.exact): string => {
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
        // The whole request path, under the covering API's listen path: that API reads it as a
        // client's (the gateway hands an internal target's path on as it is, docs/gateway.md).
        const full = g.path === '/' ? '' : g.path;
        // `$1` is what follows the group's path (with the query); an Exact group's requests have
        // nothing there, so no slash is put after its path (the gateway adds none to a bare `/`).
        return bare && full !== '' ? `svc://${covering.apiId}${full}$1` : `svc://${covering.apiId}${full}/$1`;
      }
    }
    uses.notFound = true;
    return `svc://${notFoundId}/`;
  };

  /**
   * Where a group's APIs listen: the gateway port allocated to the Gateway for the listener port
   * (per-Gateway addresses); else the listener port, the gateway's own HTTP port needing none.
   */
  const listenOn = (
    g: Pick<Group, 'port' | 'listener'>,
  ): Pick<ApiDefinitionSpec, 'protocol' | 'listen_port'> => {
    const own = ctx.ownPorts?.[g.port];
    if (own !== undefined) return { protocol: g.listener.scheme, listen_port: own };
    return g.listener.scheme === 'http' && g.port === ctx.gatewayPort
      ? {}
      : { protocol: g.listener.scheme, listen_port: g.port };
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
    // The SvcRoutePolicy of the rule (policies.ts): its settings; one that cannot be applied
    // fails closed, every request answered 500 (its status says why).
    const applied = policyFor(byTarget, gateway, c.route, c.rule.name, l.listener.name);
    if (applied?.invalid !== undefined) {
      uses.error = true;
      proxyTarget = { target_url: `svc://${errorId}/` };
      mirrorTargets.length = 0;
    }
    const policyNote =
      applied === undefined
        ? ''
        : ` with SvcRoutePolicy ${applied.policy.metadata.namespace}/${applied.policy.metadata.name}${applied.invalid === undefined ? '' : ' (invalid: answers 500)'}`;
    const route = `${c.routeKey} rules[${c.ruleIndex}]`;
    const version: VersionInfo = behaviour.version;
    return {
      api_id: id,
      // The policy applied is named in the API's name: `kubectl svc explain` prints it.
      name: `${gwName} ${route} ${l.scheme}://${g.domain || '*'}${g.path}${g.exact ? ' (exact)' : ''}${policyNote}`,
      use_keyless: true,
      ...applied?.settings,
      active: true,
      ...(behaviour.contextVars ? { enable_context_vars: true } : {}),
      ...(internal
        ? { internal: true }
        : {
            ...listenOn(g),
            ...(g.domain === '' ? {} : { domain: g.domain }),
            ...(l.secrets.length > 0 ? { certificate_secret_names: [...l.secrets] } : {}),
          }),
      proxy: {
        listen_path: g.path,
        ...(g.exact && !internal ? { listen_path_exact: true } : {}),
        // Gateway API path matches are compared with case (Exact /two does not match /Two).
        ...(internal ? {} : { listen_path_case_sensitive: true }),
        ...proxyTarget,
        strip_listen_path: false,
        // The backend gets the Host the client sent (the spec's), or the one a URLRewrite set.
        preserve_host_header: true,
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
      add(ruleApi(g, first, g.apiId, false), routesOf(g));
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
    // The rule's API gets the whole request path, under its listen path (the group's), so it
    // reads and sends it as the client's; a request with nothing after the group's path is handed
    // on without the slash the rewrite saw (the gateway drops it, docs/gateway.md).
    const whole = g.path === '/' ? '' : g.path.replace(/\/+$/, '');
    const to = (c: Candidate): string => {
      const id = ruleIdOf(c);
      add(ruleApi(g, c, id, true), [c.routeKey]);
      return `svc://${id}${whole}/$1`;
    };
    const entry = (method: URLRewriteMeta['method'], fallback: string): URLRewriteMeta => {
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
    uses.notFound = true;
    const dispatcher = (id: string, exact: boolean, fallback: string): ApiDefinitionSpec => ({
      api_id: id,
      name: `${gwName} ${l.scheme}://${g.domain || '*'}${g.path}${exact ? ' (exact)' : ''}`,
      use_keyless: true,
      active: true,
      ...(g.candidates.some((c) => c.regex !== undefined) ? { enable_context_vars: true } : {}),
      ...listenOn(g),
      ...(g.domain === '' ? {} : { domain: g.domain }),
      ...(l.secrets.length > 0 ? { certificate_secret_names: [...l.secrets] } : {}),
      proxy: {
        listen_path: g.path,
        ...(exact ? { listen_path_exact: true } : {}),
        listen_path_case_sensitive: true,
        target_url: `svc://${notFoundId}/`,
        strip_listen_path: false,
      },
      version_data: oneVersion({
        url_rewrites: [...methods.map((m) => entry(m, fallback)), entry(undefined, fallback)],
      }),
    });
    add(dispatcher(g.apiId, g.exact, fallbackOf(g)), routesOf(g));
    // A request for exactly a prefix group's path that no match takes goes on to a shorter prefix
    // with its path as sent: the rewrite sees nothing after the path as `/`, so the twin that
    // serves exactly the path (when no Exact match has it) writes no slash after it.
    const exactKey = `${g.port} ${g.domain} =${g.path.toLowerCase()}`;
    const bareFallback = fallbackOf(g, true);
    if (!g.exact && !groups.has(exactKey) && bareFallback !== fallbackOf(g)) {
      add(
        dispatcher(gatewayApiId(gateway, 'group', g.port, g.domain, 'Exact', g.path), true, bareFallback),
        routesOf(g),
      );
    }
  }
  // An HTTPS listener without a hostname answers the TLS handshake of any name on its port with
  // its certificate, then 404 for a host no route serves (the spec's HTTPRouteHTTPSListener). The
  // gateway serves a port's other names with the certificate of an API of that port without a
  // domain (gateway/certs/sni.ts): when the listener's routes all name hosts, such an API is
  // made for it, at `/`, answering 404.
  const hostless = new Map<number, ServedListener>();
  for (const c of candidates) {
    const l = c.listener;
    const port = l.listener.port;
    if (l.scheme !== 'https' || !l.usable || (l.listener.hostname ?? '') !== '' || l.secrets.length === 0)
      continue;
    if (ctx.ownPorts !== undefined && ctx.ownPorts[port] === undefined) continue;
    if (!hostless.has(port)) hostless.set(port, l);
  }
  for (const [port, l] of hostless) {
    if ([...groups.values()].some((g) => g.port === port && g.domain === '')) continue;
    uses.notFound = true;
    add({
      api_id: gatewayApiId(gateway, 'listener-default', port),
      name: `${gwName} https://*:${String(port)} listener ${l.listener.name}: its certificate for other hosts (404)`,
      use_keyless: true,
      active: true,
      ...listenOn({ port, listener: l }),
      certificate_secret_names: [...l.secrets],
      proxy: {
        listen_path: '/',
        listen_path_case_sensitive: true,
        target_url: `svc://${notFoundId}/`,
        strip_listen_path: false,
      },
      version_data: oneVersion({}),
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
