/**
 * From stored definitions to a route table. Everything a request needs is worked out here, once
 * per load: the schema check, the upstream URL, the domain, the listener, and the middleware
 * chain. A definition that fails any check is reported with its field path; the caller decides
 * what a failure means (the management API refuses the write; a reload keeps the old table).
 */
import type { GatewayApiDefinition } from '../../schemas/generated/models.ts';
import { apiDefinitionModel } from '../../schemas/models/api-definition/index.ts';
import { oasApiDocument } from '../../schemas/models/oas.ts';
import { compile as compileSchema, fieldPath, type SchemaProblem } from '../../schemas/validate.ts';
import type { Store, StoredEntry } from '../store/store.ts';
import type { Dispatcher } from 'undici';
import type { Dispatchers, HeldDispatcher, UpstreamTls } from '../upstream/dispatchers.ts';
import { CERTS, loadCertMaterial, type StoredCert } from '../certs/certs.ts';
import { upstreamCall } from '../upstream/proxy.ts';
import { overrideTargets } from '../middleware/versions/index.ts';
import { rewriteTargets } from '../middleware/url-rewrites/index.ts';
import { internalCall, type RouteLookup } from '../upstream/internal.ts';
import {
  ambiguousTargets,
  gatewayInternalTargetProblems,
  internalTargetHostsOf,
  internalUrl,
  isInternalTarget,
  isInternalUrl,
  parseInternalTarget,
} from '../../schemas/rules/internal-target.ts';
import { errorMessage } from '../../lib/errors.ts';
import { compileEvents } from '../events/compile.ts';
import { compileChain, compose } from '../pipeline/compose.ts';
import { callBento } from '../streams/proxy.ts';
import type { GatewayMiddleware, MiddlewareDeps } from '../middleware/deps.ts';
import { RouteTable, asciiLower, type ListenerKey, type Route, type Target } from '../pipeline/router.ts';
import {
  balancedTargets,
  checkClassicApi,
  domainKey,
  listenPathProblem,
  onGatewayPort,
  parsePins,
  reservedPathProblem,
  routeKey,
} from '../../schemas/rules/api-definition.ts';
import {
  isTargetProblem,
  normalizeListenPath,
  parseTarget,
  upstreamEntry,
} from '../../schemas/rules/target.ts';
import { formatProblem, type FieldProblem } from '../../schemas/rules/field-problem.ts';
import { OAS_EXTENSION, checkOasDocument, oasToClassic } from '../../schemas/oas/index.ts';
import { nestingMessage, tooDeep } from '../../schemas/rules/nesting.ts';
import { isTcpApi } from '../../schemas/rules/tcp.ts';
import { JSVM_OFF } from '../../schemas/rules/virtual-endpoints.ts';

/** What compilation needs to know about the gateway's own listeners. */
export interface CompileEnv {
  /** The configured gateway port (0 when it is chosen at start). */
  listenPort: number;
  /** The management port when it is separate; undefined when it shares the gateway port. */
  controlPort: number | undefined;
  /** Whether a TLS certificate is configured for HTTPS listeners. */
  tls: boolean;
  /** The configured HTTPS API port (`https_port`), kept open for HTTPS APIs. */
  httpsPort?: number | undefined;
  /** `enable_jsvm`: whether virtual endpoints' JavaScript may run. Absent: it may not. */
  jsvm?: boolean | undefined;
  /** The lowest port this gateway may open (server/port-privilege.ts). Absent: any. */
  lowestPort?: number | undefined;
}

/** Compilation dependencies: the middleware deps, the chain and the upstream pools. */
export interface CompileDeps extends MiddlewareDeps {
  chain: readonly GatewayMiddleware[];
  dispatchers: Dispatchers;
}

/** A definition that can't be served, and why. */
export interface ApiProblem {
  api_id: string;
  message: string;
}

/** The outcome of building a table: the table of every API that compiled, and the others. */
export interface BuildResult {
  table: RouteTable;
  /** APIs left out, and why. */
  problems: ApiProblem[];
  /** Served anyway, but worth a look (for example two APIs claiming one path). */
  warnings: string[];
  /** IDs of stored APIs not served (inactive or internal). */
  skipped: string[];
  /** The TCP and TLS APIs to serve (checked, not compiled into routes: gateway/tcp/). */
  tcp: { id: string; api: GatewayApiDefinition }[];
  /** The routes the next build may reuse, by API ID, with the stored text they come from. */
  reusable: ReusableRoutes;
}

/**
 * Routes of the table serving now that were compiled from their stored text alone
 * (`Route.reusable`), by API ID: a build reuses the route of an API whose stored text is the same,
 * without checking or compiling it again (everything a check or a compile reads is in the text,
 * or is this process's configuration, which does not change).
 */
export type ReusableRoutes = ReadonlyMap<string, { text: string; route: Route }>;

const schemaCheck = compileSchema(apiDefinitionModel);
const oasSchemaCheck = compileSchema(oasApiDocument);

/** A schema problem as a line of the management API's answer. */
const schemaLine = (p: SchemaProblem): string => `${p.path === '' ? '(root)' : p.path}: ${p.message}`;

/** The listener an API is served on. */
export function listenerOf(api: GatewayApiDefinition, env: CompileEnv): ListenerKey {
  const port = api.listen_port ?? 0;
  return port === 0 || port === env.listenPort ? 'main' : port;
}

/** `http` or `https` for the listener of an API. */
export function protocolOf(api: GatewayApiDefinition): 'http' | 'https' {
  return api.protocol === 'https' ? 'https' : 'http';
}

/** The protocol an API serves on its listener: a port has one (tcp and tls ports one API). */
export function portProtocolOf(api: GatewayApiDefinition): string {
  return isTcpApi(api) ? (api.protocol ?? 'tcp') : protocolOf(api);
}

/** Lower-case domain without port; undefined when the API takes any host. */
export function domainOf(api: GatewayApiDefinition): string | undefined {
  return domainKey(api.domain) || undefined;
}

/**
 * Every reason the definition can't be served, each as `<field path>: <message>`: the schema
 * first; then the rules of the model that every part checks (schemas/rules); then what depends on
 * this gateway's configuration (its TLS certificate and ports).
 */
export function checkApi(value: unknown, env: CompileEnv): string[] {
  const schemaProblems = schemaCheck(value).map(schemaLine);
  if (schemaProblems.length > 0) return schemaProblems;
  const api = value as GatewayApiDefinition;
  return [...checkClassicApi(api), ...configurationProblems(api, env)].map(formatProblem);
}

/**
 * Whether a stored API is an OAS document (`/svc/apis/oas`) rather than a classic definition: it
 * has the extension, which no classic definition can have.
 */
export function isOasDocument(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && Object.hasOwn(value, OAS_EXTENSION);
}

/** The classic form of a stored API: the definition itself, or what an OAS document converts to. */
export function classicOf(value: unknown): GatewayApiDefinition {
  return isOasDocument(value) ? oasToClassic(value).api : (value as GatewayApiDefinition);
}

/**
 * `checkApi` for either kind of stored API: a classic definition, or an OAS document checked
 * against its schema, then as the classic definition it converts to (problems at document
 * paths). Returns the classic form the gateway serves. A document nested too deep for the checks
 * to walk (put in the store by other means than the management API) is refused first.
 */
export function checkStoredApi(
  value: unknown,
  env: CompileEnv,
): { api: GatewayApiDefinition; problems: string[] } {
  const deep = tooDeep(value);
  if (deep !== undefined) {
    return { api: value as GatewayApiDefinition, problems: [nestingMessage('the API definition', deep)] };
  }
  if (!isOasDocument(value)) return { api: value as GatewayApiDefinition, problems: checkApi(value, env) };
  const schemaProblems = oasSchemaCheck(value).map(schemaLine);
  if (schemaProblems.length > 0) return { api: oasToClassic(value).api, problems: schemaProblems };
  const { api, problems } = checkOasDocument(value, (a) => configurationProblems(a, env));
  return { api: onHttpsPort(api, env), problems: problems.map(formatProblem) };
}

/**
 * An OAS API with static mutual TLS (`server.clientCertificates`) is served on the gateway's
 * HTTPS port (`https_port`), over HTTPS: OAS documents name no port, and on the gateway port,
 * plain HTTP, no client can present a certificate, so the API would refuse everyone. Without an
 * HTTPS port the document is refused (`oasMutualTlsProblems`).
 */
function onHttpsPort(api: GatewayApiDefinition, env: CompileEnv): GatewayApiDefinition {
  if (api.is_oas !== true || api.use_mutual_tls_auth !== true || env.httpsPort === undefined) return api;
  return { ...api, listen_port: env.httpsPort, protocol: 'https' };
}

/** An OAS API with static mutual TLS on a gateway without an HTTPS port: never servable. */
function oasMutualTlsProblems(api: GatewayApiDefinition, env: CompileEnv): FieldProblem[] {
  if (api.is_oas !== true || api.use_mutual_tls_auth !== true || env.httpsPort !== undefined) return [];
  return [
    {
      path: 'use_mutual_tls_auth',
      type: 'Forbidden',
      message:
        "static mutual TLS needs the gateway's HTTPS port: OAS APIs are served on the gateway port, plain HTTP, where no client presents a certificate; start the gateway with https_port (--https-port, with --tls-cert and --tls-key), where such APIs are served, or set enabled to false",
    },
  ];
}

/** What this gateway's configuration adds to the shared rules. */
function configurationProblems(api: GatewayApiDefinition, env: CompileEnv): FieldProblem[] {
  // The object form of internal targets names an API by its ID here (the operator resolves
  // references), which only the gateway's model says.
  const problems: FieldProblem[] = gatewayInternalTargetProblems(api);
  if (env.jsvm !== true) problems.push(...jsvmProblems(api));
  problems.push(...oasMutualTlsProblems(api, env));
  const listener = listenerOf(api, env);
  const lowest = env.lowestPort ?? 1;
  if (
    listener !== 'main' &&
    listener < lowest &&
    listener !== env.httpsPort &&
    listener !== env.controlPort
  ) {
    problems.push({
      path: 'listen_port',
      type: 'Invalid',
      message: `port ${String(listener)} needs a privilege this gateway does not have (it runs as a user without CAP_NET_BIND_SERVICE): choose a listen_port from ${String(lowest)}`,
    });
  }
  if (api.protocol === 'https') {
    if (!env.tls) {
      problems.push({
        path: 'protocol',
        type: 'Invalid',
        message:
          "https needs the gateway's TLS certificate: configure tls_cert_file and tls_key_file, or use http",
      });
    }
    if (listener === 'main') {
      problems.push({
        path: 'listen_port',
        type: 'Required',
        message: 'https needs a listen_port of its own: the gateway port serves http',
      });
    }
  }
  if (isTcpApi(api)) {
    const port = api.listen_port ?? 0;
    if (port > 0 && port === env.listenPort) {
      problems.push({
        path: 'listen_port',
        type: 'Invalid',
        message: `${port} is the gateway port, which serves HTTP: choose another listen_port`,
      });
    }
    if (port > 0 && port === env.httpsPort) {
      problems.push({
        path: 'listen_port',
        type: 'Invalid',
        message: `${port} is the gateway's HTTPS port (https_port), which serves HTTPS APIs: choose another listen_port`,
      });
    }
    if (api.protocol === 'tls' && !env.tls && (api.certificates ?? []).length === 0) {
      problems.push({
        path: 'certificates',
        type: 'Required',
        message:
          "a tls API terminates TLS with its certificates, or the gateway's (tls_cert_file): list the certificate IDs /svc/certs gave",
      });
    }
  }
  if (listener !== 'main' && listener === env.controlPort) {
    problems.push({
      path: 'listen_port',
      type: 'Invalid',
      message: `${listener} is the management port: choose another listen_port`,
    });
  }
  // The shared rule reserves the management paths when listen_port is unset or 0; a listen_port
  // equal to the gateway's own port is the gateway port too.
  const lp = api.proxy.listen_path;
  if (listener === 'main' && !onGatewayPort(api) && listenPathProblem(lp) === undefined) {
    const reserved = reservedPathProblem(lp);
    if (reserved !== undefined)
      problems.push({ path: 'proxy.listen_path', type: 'Invalid', message: reserved });
  }
  return problems;
}

/**
 * Each virtual endpoint (`extended_paths.virtual`, blob or file, of any version) that is not
 * disabled, refused: its function would run in a `node:vm` context, which is no security
 * boundary, so running API authors' JavaScript is the operator's choice (`enable_jsvm`, off by
 * default, as the reference's).
 */
function jsvmProblems(api: GatewayApiDefinition): FieldProblem[] {
  const problems: FieldProblem[] = [];
  for (const [name, v] of Object.entries(api.version_data?.versions ?? {})) {
    const at = fieldPath(`/version_data/versions/${name.replaceAll('~', '~0').replaceAll('/', '~1')}`);
    (v.extended_paths?.virtual ?? []).forEach((e, i) => {
      if (e.disabled === true) return;
      problems.push({
        path: `${at}.extended_paths.virtual[${String(i)}]`,
        type: 'Forbidden',
        message: JSVM_OFF,
      });
    });
  }
  return problems;
}

/** Whether a stored API is served at all. */
export function isServed(api: GatewayApiDefinition): boolean {
  return api.active !== false && api.internal !== true;
}

/**
 * Whether the connection-level fast path may serve a route: one explicit rule, in one place. It
 * reads request heads only and speaks plain HTTP/1.1 to the upstream over its own sockets, so: an
 * http upstream, no TLS settings of the route's own towards it (`upstream_certificates`,
 * `pinned_public_keys`: only the route's undici agent applies them), and no middleware that reads
 * the body. Middleware that read only the head run on it too.
 */
export function fastPathServes(
  route: {
    target: Target | undefined;
    upstreamTls?: UpstreamTls | undefined;
    /** The versions' `override_target`s: each must be http too. */
    overrides?: readonly Target[];
  },
  chain: { readsBody: boolean },
): boolean {
  return (
    route.target?.origin.startsWith('http://') === true &&
    (route.overrides ?? []).every((t) => t.origin.startsWith('http://')) &&
    route.upstreamTls === undefined &&
    !chain.readsBody
  );
}

/** Host name of a target (`host[:port]`), lower case, without port or IPv6 brackets. */
function targetHostname(target: Target): string {
  return new URL(target.origin).hostname.replace(/^\[|\]$/g, '').toLowerCase();
}

/**
 * The TLS settings of an API's upstream (`upstream_certificates`, `pinned_public_keys`, the entry
 * for the target's host), with certificates read from `/svc/certs`; undefined when none applies
 * or the upstream is plain http. Throws, naming the field, when a certificate is missing or has
 * no usable private key: such an API is left out of the table, never served without it.
 */
export async function resolveUpstreamTls(
  api: GatewayApiDefinition,
  target: Target | undefined,
  store: Store,
  gatewaySecret: string,
): Promise<UpstreamTls | undefined> {
  if (!target?.origin.startsWith('https://')) return undefined;
  const host = targetHostname(target);
  const certId = upstreamEntry(api.upstream_certificates, host)?.trim();
  const pinList = upstreamEntry(api.pinned_public_keys, host);
  if ((certId === undefined || certId === '') && pinList === undefined) return undefined;
  const tls: UpstreamTls = {};
  if (certId !== undefined && certId !== '') {
    const material = await loadCertMaterial(store, certId, gatewaySecret);
    if (material === undefined)
      throw new Error(`upstream_certificates: certificate ${certId} for ${host} is not stored (/svc/certs)`);
    if (material.key === undefined)
      throw new Error(
        `upstream_certificates: certificate ${certId} for ${host} has no usable private key: upload it with its key`,
      );
    tls.client = { id: certId, cert: material.cert, key: material.key };
  }
  if (pinList !== undefined) {
    const { pins, problems } = parsePins(pinList);
    if (problems.length > 0) throw new Error(`pinned_public_keys: ${problems.join('; ')}`);
    const hashes: string[] = [];
    for (const pin of pins) {
      if ('sha256' in pin) {
        hashes.push(pin.sha256);
        continue;
      }
      const stored = (await store.get(CERTS, pin.certId)) as StoredCert | undefined;
      if (stored === undefined)
        throw new Error(
          `pinned_public_keys: certificate ${pin.certId} for ${host} is not stored (/svc/certs)`,
        );
      hashes.push(Buffer.from(stored.spki_sha256, 'hex').toString('base64'));
    }
    tls.pins = hashes;
  }
  return tls;
}

/** Compiles one checked definition into a route (its middleware may open resources). */
export async function compileApi(
  def: GatewayApiDefinition,
  id: string,
  env: CompileEnv,
  deps: CompileDeps,
  /** The APIs of the table being built, for internal targets (`svc://`). */
  lookup?: RouteLookup,
): Promise<Route> {
  const api: GatewayApiDefinition = def.api_id === id ? def : { ...def, api_id: id };
  // `proxy.target_internal` (another API of the gateway) stands for target_url.
  const targetUrl = internalUrl(api.proxy.target_internal) ?? api.proxy.target_url;
  const parsed =
    targetUrl === undefined || targetUrl === ''
      ? undefined
      : isInternalUrl(targetUrl)
        ? parseInternalTarget(targetUrl)
        : parseTarget(targetUrl);
  // A load-balanced API without target_url: its first upstream stands for the route's.
  const balanced = balancedTargets(api);
  const target = parsed === undefined || isTargetProblem(parsed) ? balanced[0] : parsed;
  const listenPath = normalizeListenPath(api.proxy.listen_path);
  const strip = api.proxy.strip_listen_path === true;
  // Upstream TLS settings first, for the target and each upstream of a load-balanced target_list
  // (each host gets its own entry): a missing certificate leaves the API out before anything opens.
  const held: HeldDispatcher[] = [];
  const releaseAll = async (): Promise<void> => {
    await Promise.all(held.map((h) => h.release()));
  };
  const byOrigin = new Map<string, Dispatcher>();
  let upstreamTls: UpstreamTls | undefined;
  try {
    for (const t of [target, ...balanced]) {
      if (t === undefined || byOrigin.has(t.origin)) continue;
      const tls = await resolveUpstreamTls(api, t, deps.store, deps.config.secret);
      if (tls === undefined) continue;
      const h = deps.dispatchers.acquire(api.proxy.transport, tls);
      held.push(h);
      byOrigin.set(t.origin, h.dispatcher);
      upstreamTls ??= tls;
    }
  } catch (err) {
    await releaseAll();
    throw err;
  }
  // Any other upstream (an override_target, a rewrite to another host) has the target's settings
  // (schemas/rules refuses one whose host has settings of its own).
  const fallback =
    (target === undefined ? undefined : byOrigin.get(target.origin)) ??
    deps.dispatchers.for(api.proxy.transport);
  const upstream = upstreamCall(
    { target, listenPath, strip, preserveHost: api.proxy.preserve_host_header === true },
    byOrigin.size === 0 ? fallback : (t) => byOrigin.get(t.origin) ?? fallback,
    deps.metrics === undefined ? undefined : () => deps.metrics?.upstreamError(),
  );
  // Internal targets (`svc://`: target_url, target_internal, a rewrite) run another API's chain.
  const internal = [target, ...rewriteTargets(api)].some((t) => t !== undefined && isInternalTarget(t))
    ? internalCall({ listenPath, strip, self: () => self }, lookup ?? (() => undefined))
    : undefined;
  const proxied: typeof upstream =
    internal === undefined
      ? upstream
      : (ctx) => {
          const t = ctx.upstream.target ?? target;
          return t !== undefined && isInternalTarget(t) ? internal(ctx, t) : upstream(ctx);
        };
  // A stream endpoint planned by the streams middleware is called on Bento (streams/proxy.ts).
  const terminal: typeof upstream = (ctx) =>
    ctx.upstream.service !== undefined ? callBento(ctx) : proxied(ctx);
  let compiled: Awaited<ReturnType<typeof compileChain>>;
  try {
    compiled = await compileChain(deps.chain, api, lookup === undefined ? deps : { ...deps, routes: lookup });
  } catch (err) {
    await releaseAll();
    throw err;
  }
  let events: ReturnType<typeof compileEvents>;
  try {
    events = compileEvents(api, {
      log: deps.log,
      now: deps.now,
      metrics: deps.metrics,
      coprocessServer: deps.config.coprocess_grpc_server,
      pluginTimeoutMs: deps.config.plugin_timeout_ms,
    });
  } catch (err) {
    await compiled.close();
    await releaseAll();
    throw err;
  }
  const self: Route = {
    id,
    api,
    listener: listenerOf(api, env),
    domain: domainOf(api),
    domainOneLabel: api.domain_wildcard_one_label === true,
    listenPath,
    exactPath: api.proxy.listen_path_exact === true ? asciiLower(api.proxy.listen_path) : undefined,
    strip,
    target,
    handle: compose(compiled.handlers, terminal),
    handlers: compiled.handlers,
    fastPath: fastPathServes(
      {
        target,
        upstreamTls,
        overrides: [...overrideTargets(api), ...rewriteTargets(api), ...balanced],
      },
      compiled,
    ),
    bodyPaths: compiled.bodyPaths.size > 0 ? compiled.bodyPaths : undefined,
    // Internal targets look up the table being built: such a route is compiled with each table.
    reusable: compiled.fromDefinition && upstreamTls === undefined && internal === undefined,
    close: async () => {
      await compiled.close();
      await events.close();
      await releaseAll();
    },
    events,
  };
  return self;
}

/**
 * Why `api` can't share its listener with the APIs already `claimed` (listener -> protocol and the
 * API that set it), or undefined: one port has one protocol.
 */
export function protocolConflict(
  api: GatewayApiDefinition,
  claimed: ReadonlyMap<ListenerKey, { protocol: string; by: string }>,
  env: CompileEnv,
  /** The API's own ID: its own claim is no clash. */
  id?: string,
): string | undefined {
  const listener = listenerOf(api, env);
  const seen = claimed.get(listener);
  const protocol = portProtocolOf(api);
  if (seen === undefined || seen.by === id) return undefined;
  const port = listener === 'main' ? 'the gateway port' : `port ${String(listener)}`;
  // A tcp or tls port pipes every connection to one upstream: it has one API.
  if (isTcpProtocol(seen.protocol) || isTcpProtocol(protocol))
    return `listen_port: ${port} is already the port of API ${seen.by} (${seen.protocol}); a tcp or tls API has its port alone`;
  if (seen.protocol === protocol) return undefined;
  return `listen_port: ${port} already serves ${seen.protocol} for API ${seen.by}; a port has one protocol`;
}

const isTcpProtocol = (p: string): boolean => p === 'tcp' || p === 'tls';

/** Listener protocols claimed by `apis`, the first (by order) winning. */
export function claimedProtocols(
  apis: readonly { id: string; api: GatewayApiDefinition }[],
  env: CompileEnv,
): Map<ListenerKey, { protocol: string; by: string }> {
  const claimed = new Map<ListenerKey, { protocol: string; by: string }>();
  for (const { id, api } of apis) {
    const listener = listenerOf(api, env);
    if (!claimed.has(listener)) claimed.set(listener, { protocol: portProtocolOf(api), by: id });
  }
  return claimed;
}

function crossCheck(apis: { id: string; api: GatewayApiDefinition }[], env: CompileEnv): ApiProblem[] {
  const claimed = claimedProtocols(apis, env);
  const problems: ApiProblem[] = [];
  for (const { id, api } of apis) {
    const conflict = protocolConflict(api, claimed, env, id);
    if (conflict !== undefined) problems.push({ api_id: id, message: conflict });
  }
  return problems;
}

/**
 * Worked out once per route or definition, not at every reload (a reload keeps the route and the
 * definition of an unchanged API: issue 33 item 4).
 */
const claimKeys = new WeakMap<Route, string>();
const internalHosts = new WeakMap<GatewayApiDefinition, boolean>();

/** What two routes claiming one path share: listener, domain tier and the route key. */
function claimKeyOf(r: Route): string {
  let key = claimKeys.get(r);
  if (key === undefined) {
    key = `${String(r.listener)} ${r.domain ?? '*'}${r.domainOneLabel === true ? ' one-label' : ''} ${routeKey(r.exactPath ?? r.listenPath, r.exactPath !== undefined)}`;
    claimKeys.set(r, key);
  }
  return key;
}

/** Whether the definition names another API as a target (`svc://`) anywhere. */
function hasInternalTargets(api: GatewayApiDefinition): boolean {
  let has = internalHosts.get(api);
  if (has === undefined) {
    has = internalTargetHostsOf(api).length > 0;
    internalHosts.set(api, has);
  }
  return has;
}

/**
 * Checks and compiles every stored API. One that fails (a check, a protocol clash with an API
 * before it, or its middleware) is reported and left out; every other API is served. An API whose
 * stored text is unchanged since `previous` was built keeps its route.
 */
export async function buildRouteTable(
  entries: readonly StoredEntry[],
  env: CompileEnv,
  deps: CompileDeps,
  previous?: ReusableRoutes,
): Promise<BuildResult> {
  const problems: ApiProblem[] = [];
  const skipped: string[] = [];
  const checked: { id: string; api: GatewayApiDefinition; kept?: Route; text?: string }[] = [];
  const internalApis: { id: string; api: GatewayApiDefinition }[] = [];
  // Internal targets look up the table this build makes, once it is made.
  const built: { table?: RouteTable } = {};
  const lookup: RouteLookup = (host) => built.table?.byTarget(host);
  for (const e of entries) {
    if ('problem' in e) {
      problems.push({ api_id: e.id, message: e.problem });
      continue;
    }
    const before = e.text === undefined ? undefined : previous?.get(e.id);
    if (before !== undefined && before.text === e.text) {
      checked.push({ id: e.id, api: before.route.api, kept: before.route, text: e.text });
      continue;
    }
    const { api, problems: found } = checkStoredApi(e.value, env);
    if (found.length === 0 && api.api_id !== undefined && api.api_id !== e.id) {
      const field = isOasDocument(e.value) ? 'x-svc-api-gateway.info.id' : 'api_id';
      found.push(`${field}: ${api.api_id} differs from the ID it is stored under`);
    }
    if (found.length > 0) {
      problems.push({ api_id: e.id, message: found.join('; ') });
      continue;
    }
    if (isServed(api)) checked.push({ id: e.id, api, ...(e.text === undefined ? {} : { text: e.text }) });
    else {
      skipped.push(e.id);
      // Served to no client, but reachable through internal targets: compiled, never matched.
      if (api.active !== false) internalApis.push({ id: e.id, api });
    }
  }
  const clashes = crossCheck(checked, env);
  problems.push(...clashes);
  const clashing = new Set(clashes.map((p) => p.api_id));
  // TCP and TLS APIs are served by gateway/tcp/, not by routes.
  const tcp = checked.filter(({ id, api }) => isTcpApi(api) && !clashing.has(id));
  const routes: Route[] = [];
  const reusable = new Map<string, { text: string; route: Route }>();
  for (const { id, api, kept, text } of checked) {
    if (clashing.has(id) || isTcpApi(api)) continue;
    try {
      const route = kept ?? (await compileApi(api, id, env, deps, lookup));
      routes.push(route);
      if (route.reusable && text !== undefined) reusable.set(id, { text, route });
    } catch (err) {
      problems.push({ api_id: id, message: errorMessage(err) });
    }
  }
  const internalRoutes: Route[] = [];
  for (const { id, api } of internalApis) {
    if (clashing.has(id)) continue;
    try {
      internalRoutes.push(await compileApi(api, id, env, deps, lookup));
    } catch (err) {
      problems.push({ api_id: id, message: errorMessage(err) });
    }
  }
  const table = new RouteTable(routes, internalRoutes);
  built.table = table;
  const warnings: string[] = [];
  const claimed = new Map<string, string>();
  for (const r of table.routes) {
    const key = claimKeyOf(r);
    const owner = claimed.get(key);
    if (owner === undefined) claimed.set(key, r.id);
    else warnings.push(`APIs ${owner} and ${r.id} claim the same domain and listen path; ${owner} serves it`);
  }
  // An internal target naming an API by a name several APIs share: the API is served, and its
  // requests to that target get 502 (upstream/internal.ts) until one API has the name.
  const named = [...checked, ...internalApis].map(({ id, api }) => ({ id, name: api.name }));
  for (const { id, api } of [...checked, ...internalApis])
    for (const p of hasInternalTargets(api) ? ambiguousTargets(api, id, named) : [])
      warnings.push(`API ${id}: ${formatProblem(p)} (its requests to this target get 502 until then)`);
  return { table, problems, warnings, skipped, reusable, tcp: tcp.map(({ id, api }) => ({ id, api })) };
}
