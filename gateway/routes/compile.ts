/**
 * From stored definitions to a route table. Everything a request needs is worked out here, once
 * per load: the upstream URL, the upstream TLS settings, the domain, the listener, and the
 * middleware chain, for each definition that passes the checks (check.ts). A definition that fails
 * a check or does not compile is reported with its field path; the caller decides what a failure
 * means (the management API refuses the write; a reload keeps the old table).
 */
import type { GatewayApiDefinition } from '../../schemas/generated/models.ts';
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
import { RouteTable, asciiLower, type Route, type Target } from '../pipeline/router.ts';
import type { UpstreamConnect } from '../pipeline/route.ts';
import { balancedTargets, domainKey, parsePins, routeKey } from '../../schemas/rules/api-definition.ts';
import {
  isTargetProblem,
  normalizeListenPath,
  parseTarget,
  upstreamEntry,
} from '../../schemas/rules/target.ts';
import { formatProblem } from '../../schemas/rules/field-problem.ts';
import { isTcpApi } from '../../schemas/rules/tcp.ts';
import {
  checkStoredApi,
  claimedProtocols,
  isOasDocument,
  isServed,
  listenerOf,
  protocolConflict,
  type CompileEnv,
} from './check.ts';

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
  /**
   * The table without the routes of `ids` (APIs left out after the build: their port can't be
   * opened), in place of `table`, which it retires; the internal targets (`svc://`) of the routes
   * kept then look up the new one.
   */
  without: (ids: ReadonlySet<string>) => RouteTable;
}

/**
 * Routes of the table serving now that were compiled from their stored text alone
 * (`Route.reusable`), by API ID: a build reuses the route of an API whose stored text is the same,
 * without checking or compiling it again (everything a check or a compile reads is in the text,
 * or is this process's configuration, which does not change).
 */
export type ReusableRoutes = ReadonlyMap<string, { text: string; route: Route }>;

/** Lower-case domain without port; undefined when the API takes any host. */
export function domainOf(api: GatewayApiDefinition): string | undefined {
  return domainKey(api.domain) || undefined;
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
  const keepSlash = api.proxy.disable_strip_slash === true;
  // Upstream TLS settings first, for the target and each upstream of a load-balanced target_list
  // (each host gets its own entry): a missing certificate leaves the API out before anything opens.
  const held: HeldDispatcher[] = [];
  const releaseAll = (): Promise<void> => releaseHeld(held);
  const byOrigin = new Map<string, Dispatcher>();
  /** The connectors of `byOrigin`'s dispatchers (a relayed WebSocket dials with them). */
  const connectors = new Map<string, UpstreamConnect>();
  let upstreamTls: UpstreamTls | undefined;
  try {
    for (const t of [target, ...balanced]) {
      if (t === undefined || byOrigin.has(t.origin)) continue;
      const tls = await resolveUpstreamTls(api, t, deps.store, deps.config.secret);
      if (tls === undefined) continue;
      const h = deps.dispatchers.acquire(api.proxy.transport, tls);
      held.push(h);
      byOrigin.set(t.origin, h.dispatcher);
      connectors.set(t.origin, h.connect);
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
  const fallbackConnect =
    (target === undefined ? undefined : connectors.get(target.origin)) ??
    deps.dispatchers.connectorFor(api.proxy.transport);
  const upstream = upstreamCall(
    { target, listenPath, strip, keepSlash, preserveHost: api.proxy.preserve_host_header === true },
    byOrigin.size === 0 ? fallback : dispatcherOf(byOrigin, fallback),
    upstreamErrorCounter(deps),
  );
  // Internal targets (`svc://`: target_url, target_internal, a rewrite) run another API's chain.
  const internal = [target, ...rewriteTargets(api)].some((t) => t !== undefined && isInternalTarget(t))
    ? internalCall({ listenPath, strip, keepSlash, self: () => self }, lookup ?? (() => undefined))
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
    casedPath:
      api.proxy.listen_path_case_sensitive === true
        ? api.proxy.listen_path_exact === true
          ? api.proxy.listen_path
          : listenPath
        : undefined,
    strip,
    keepSlash,
    target,
    upstreamConnector: (t) => connectors.get(t.origin) ?? fallbackConnect,
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
    close: closer(compiled.close, events, held),
    events,
  };
  return self;
}

/*
 * The closures a route keeps are made by these functions, apart from compileApi's scope: a closure
 * keeps its whole scope alive (V8 shares one context among a function's closures), and
 * compileApi's holds the compile's leftovers (the chain's body paths, the dispatchers by origin).
 * At 10,000 APIs that was about 0.6 KiB per route (issue 33 item 4).
 */

async function releaseHeld(held: readonly HeldDispatcher[]): Promise<void> {
  await Promise.all(held.map((h) => h.release()));
}

function dispatcherOf(byOrigin: Map<string, Dispatcher>, fallback: Dispatcher): (t: Target) => Dispatcher {
  return (t) => byOrigin.get(t.origin) ?? fallback;
}

function upstreamErrorCounter(deps: CompileDeps): (() => void) | undefined {
  const metrics = deps.metrics;
  return metrics === undefined
    ? undefined
    : () => {
        metrics.upstreamError();
      };
}

function closer(
  closeChain: () => Promise<void>,
  events: { close(): Promise<void> },
  held: readonly HeldDispatcher[],
): () => Promise<void> {
  return async () => {
    await closeChain();
    await events.close();
    await releaseHeld(held);
  };
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
  const checked: {
    id: string;
    api: GatewayApiDefinition;
    kept?: Route;
    text?: string;
    /** The previous build's entry of a kept route, handed on as it is. */
    from?: { text: string; route: Route };
  }[] = [];
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
      checked.push({ id: e.id, api: before.route.api, kept: before.route, text: e.text, from: before });
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
  for (const { id, api, kept, text, from } of checked) {
    if (clashing.has(id) || isTcpApi(api)) continue;
    if (kept !== undefined) {
      // Reused as it is, without an await: most of the APIs of a reload.
      routes.push(kept);
      if (from !== undefined) reusable.set(id, from);
      continue;
    }
    try {
      const route = await compileApi(api, id, env, deps, lookup);
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
  // The names of every API only when one of them names another as a target.
  let named: { id: string; name: string }[] | undefined;
  for (const list of [checked, internalApis])
    for (const { id, api } of list) {
      if (!hasInternalTargets(api)) continue;
      named ??= [...checked, ...internalApis].map((x) => ({ id: x.id, name: x.api.name }));
      for (const p of ambiguousTargets(api, id, named))
        warnings.push(`API ${id}: ${formatProblem(p)} (its requests to this target get 502 until then)`);
    }
  const without = (ids: ReadonlySet<string>): RouteTable => {
    built.table = new RouteTable(
      table.routes.filter((r) => !ids.has(r.id)),
      table.internal,
    );
    // The full table held the routes too: retired, it closes those no other table holds.
    void table.retire();
    return built.table;
  };
  return {
    table,
    problems,
    warnings,
    skipped,
    reusable,
    tcp: tcp.map(({ id, api }) => ({ id, api })),
    without,
  };
}
