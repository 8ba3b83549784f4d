/**
 * From stored definitions to a route table. Everything a request needs is worked out here, once
 * per load: the schema check, the upstream URL, the domain, the listener, and the middleware
 * chain. A definition that fails any check is reported with its field path; the caller decides
 * what a failure means (the management API refuses the write; a reload keeps the old table).
 */
import type { GatewayApiDefinition } from '../../schemas/generated/models.ts';
import { apiDefinitionModel } from '../../schemas/models/api-definition.ts';
import { compile as compileSchema } from '../../schemas/validate.ts';
import type { StoredEntry } from '../store/store.ts';
import type { Dispatchers } from '../upstream/dispatchers.ts';
import { upstreamCall } from '../upstream/proxy.ts';
import { compose, handlersFor, type Middleware, type MiddlewareDeps } from './compose.ts';
import { normalizeListenPath, RouteTable, type ListenerKey, type Route, type Target } from './router.ts';

/** What compilation needs to know about the gateway's own listeners. */
export interface CompileEnv {
  /** The configured gateway port (0 when it is chosen at start). */
  listenPort: number;
  /** The management port when it is separate; undefined when it shares the gateway port. */
  controlPort: number | undefined;
  /** Whether a TLS certificate is configured for HTTPS listeners. */
  tls: boolean;
}

/** Compilation dependencies: the middleware deps, the chain and the upstream pools. */
export interface CompileDeps extends MiddlewareDeps {
  chain: readonly Middleware[];
  dispatchers: Dispatchers;
}

/** A definition that can't be served, and why. */
export interface ApiProblem {
  api_id: string;
  message: string;
}

/** The outcome of building a table: a table, or the problems that prevented it. */
export interface BuildResult {
  table: RouteTable | undefined;
  problems: ApiProblem[];
  /** Served anyway, but worth a look (for example two APIs claiming one path). */
  warnings: string[];
  /** IDs of stored APIs not served (inactive or internal). */
  skipped: string[];
}

const schemaCheck = compileSchema(apiDefinitionModel);

/** Paths the management API owns on the port it listens on. */
const RESERVED_PATHS = ['/svc', '/hello', '/ready'];

const DOMAIN = /^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/;

/** Parses `target_url`; a bare `host:port` (such as `svc.ns.svc:8080`) means http. */
export function parseTarget(raw: string): Target | string {
  const text = /^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `http://${raw}`;
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    return 'Invalid value: not a URL';
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    return `Unsupported value: scheme ${u.protocol.slice(0, -1)} (use http or https)`;
  }
  if (u.hostname === '') return 'Invalid value: no host';
  if (u.username !== '' || u.password !== '')
    return 'Invalid value: credentials in the URL are not supported';
  return {
    origin: `${u.protocol}//${u.host}`,
    host: u.host,
    basePath: normalizeListenPath(u.pathname),
    baseQuery: u.search.slice(1),
  };
}

/** The listener an API is served on. */
export function listenerOf(api: GatewayApiDefinition, env: CompileEnv): ListenerKey {
  const port = api.listen_port ?? 0;
  return port === 0 || port === env.listenPort ? 'main' : port;
}

/** `http` or `https` for the listener of an API. */
export function protocolOf(api: GatewayApiDefinition): 'http' | 'https' {
  return api.protocol === 'https' ? 'https' : 'http';
}

/** Lower-case domain without port; undefined when the API takes any host. */
export function domainOf(api: GatewayApiDefinition): string | undefined {
  const d = api.domain?.trim().toLowerCase() ?? '';
  if (d === '') return undefined;
  const colon = d.lastIndexOf(':');
  const host = colon === -1 ? d : d.slice(0, colon);
  return host.endsWith('.') ? host.slice(0, -1) : host;
}

/**
 * Every reason the definition can't be served, each as `<field path>: <message>`: the schema
 * first, then what the gateway checks beyond it.
 */
export function checkApi(value: unknown, env: CompileEnv): string[] {
  const schemaProblems = schemaCheck(value).map((p) => `${p.path === '' ? '(root)' : p.path}: ${p.message}`);
  if (schemaProblems.length > 0) return schemaProblems;
  const api = value as GatewayApiDefinition;
  const problems: string[] = [];
  const target = api.proxy.target_url;
  if (target === undefined || target === '') {
    if (api.graphql?.enabled !== true)
      problems.push('proxy.target_url: Required value: add the upstream URL');
  } else {
    const t = parseTarget(target);
    if (typeof t === 'string') problems.push(`proxy.target_url: ${t}`);
  }
  if (api.protocol === 'tcp' || api.protocol === 'tls') {
    problems.push(
      `protocol: Unsupported value: ${api.protocol} listeners are not supported yet; use http or https`,
    );
  }
  const listener = listenerOf(api, env);
  if (api.protocol === 'https') {
    if (!env.tls) {
      problems.push("protocol: https needs the gateway's TLS certificate (tls_cert_file and tls_key_file)");
    }
    if (listener === 'main')
      problems.push('listen_port: https needs its own listen_port; the gateway port serves http');
  }
  if (listener !== 'main' && listener === env.controlPort) {
    problems.push(`listen_port: ${listener} is the management port`);
  }
  const lp = normalizeListenPath(api.proxy.listen_path);
  if (listener === 'main' && env.controlPort === undefined) {
    const reserved = RESERVED_PATHS.find((r) => lp === r || lp.startsWith(`${r}/`));
    if (reserved !== undefined) {
      problems.push(
        `proxy.listen_path: ${reserved} is the management API's on the gateway port; choose another path, a listen_port, or a control_port`,
      );
    }
  }
  const domain = domainOf(api);
  if (domain !== undefined && !DOMAIN.test(domain)) {
    problems.push('domain: Invalid value: a host name such as api.example.com, or *. and a host name');
  }
  return problems;
}

/** Whether a stored API is served at all. */
export function isServed(api: GatewayApiDefinition): boolean {
  return api.active !== false && api.internal !== true;
}

/** Compiles one checked definition into a route. */
export function compileApi(api: GatewayApiDefinition, id: string, env: CompileEnv, deps: CompileDeps): Route {
  const target =
    api.proxy.target_url === undefined || api.proxy.target_url === ''
      ? undefined
      : parseTarget(api.proxy.target_url);
  const listenPath = normalizeListenPath(api.proxy.listen_path);
  const strip = api.proxy.strip_listen_path === true;
  const upstream = upstreamCall(
    {
      target: typeof target === 'string' ? undefined : target,
      listenPath,
      strip,
      preserveHost: api.proxy.preserve_host_header === true,
    },
    deps.dispatchers.for(api.proxy.transport),
  );
  const handlers = handlersFor(deps.chain, api, deps);
  return {
    id,
    api,
    listener: listenerOf(api, env),
    domain: domainOf(api),
    listenPath,
    strip,
    target: typeof target === 'string' ? undefined : target,
    handle: compose(handlers, upstream),
    noMiddleware: handlers.length === 0,
  };
}

/**
 * Why `api` can't share its listener with the APIs already `claimed` (listener -> protocol and the
 * API that set it), or undefined: one port has one protocol.
 */
export function protocolConflict(
  api: GatewayApiDefinition,
  claimed: ReadonlyMap<ListenerKey, { protocol: string; by: string }>,
  env: CompileEnv,
): string | undefined {
  const listener = listenerOf(api, env);
  const seen = claimed.get(listener);
  const protocol = protocolOf(api);
  if (seen === undefined || seen.protocol === protocol) return undefined;
  const port = listener === 'main' ? 'the gateway port' : `port ${String(listener)}`;
  return `listen_port: ${port} already serves ${seen.protocol} for API ${seen.by}; a port has one protocol`;
}

/** Listener protocols claimed by `apis`, the first (by order) winning. */
export function claimedProtocols(
  apis: readonly { id: string; api: GatewayApiDefinition }[],
  env: CompileEnv,
): Map<ListenerKey, { protocol: string; by: string }> {
  const claimed = new Map<ListenerKey, { protocol: string; by: string }>();
  for (const { id, api } of apis) {
    const listener = listenerOf(api, env);
    if (!claimed.has(listener)) claimed.set(listener, { protocol: protocolOf(api), by: id });
  }
  return claimed;
}

function crossCheck(apis: { id: string; api: GatewayApiDefinition }[], env: CompileEnv): ApiProblem[] {
  const claimed = claimedProtocols(apis, env);
  const problems: ApiProblem[] = [];
  for (const { id, api } of apis) {
    const conflict = protocolConflict(api, claimed, env);
    if (conflict !== undefined) problems.push({ api_id: id, message: conflict });
  }
  return problems;
}

/** Checks and compiles every stored API; a table only when nothing failed. */
export function buildRouteTable(
  entries: readonly StoredEntry[],
  env: CompileEnv,
  deps: CompileDeps,
): BuildResult {
  const problems: ApiProblem[] = [];
  const skipped: string[] = [];
  const served: { id: string; api: GatewayApiDefinition }[] = [];
  for (const e of entries) {
    if ('problem' in e) {
      problems.push({ api_id: e.id, message: e.problem });
      continue;
    }
    const found = checkApi(e.value, env);
    const api = e.value as GatewayApiDefinition;
    if (found.length === 0 && api.api_id !== undefined && api.api_id !== e.id) {
      found.push(`api_id: ${api.api_id} differs from the ID it is stored under`);
    }
    if (found.length > 0) {
      problems.push({ api_id: e.id, message: found.join('; ') });
      continue;
    }
    if (isServed(api)) served.push({ id: e.id, api });
    else skipped.push(e.id);
  }
  problems.push(...crossCheck(served, env));
  if (problems.length > 0) return { table: undefined, problems, warnings: [], skipped };

  const routes = served.map(({ id, api }) => compileApi(api, id, env, deps));
  const warnings: string[] = [];
  const claimed = new Map<string, string>();
  for (const r of [...routes].sort((a, b) => (a.id < b.id ? -1 : 1))) {
    const key = `${String(r.listener)} ${r.domain ?? '*'} ${r.listenPath || '/'}`;
    const owner = claimed.get(key);
    if (owner === undefined) claimed.set(key, r.id);
    else warnings.push(`APIs ${owner} and ${r.id} claim the same domain and listen path; ${owner} serves it`);
  }
  return { table: new RouteTable(routes), problems: [], warnings, skipped };
}
