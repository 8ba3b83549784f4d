/**
 * One gateway process: its listeners, its management API, and the route table. A reload reads
 * every stored API, builds the complete new table (and opens the API ports it needs), then swaps
 * it in one assignment; requests already running finish on the table they started with. When
 * anything fails to compile, the old table keeps serving and the reload reports why. What a
 * reload builds and opens before its swap, and reports after, is reload.ts.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { errorMessage } from '../../lib/errors.ts';
import type { Logger } from '../../lib/log.ts';
import pkg from '../../package.json' with { type: 'json' };
import { Admin, type ReloadReport } from '../admin/index.ts';
import { SniTable } from '../certs/sni.ts';
import type { TlsMaterial } from '../config/load.ts';
import type { GatewayConfig } from '../config/schema.ts';
import { chain as defaultChain, stages } from '../routes/chain.ts';
import { explain } from './explain.ts';
import type { CompileEnv } from '../routes/check.ts';
import type { CompileDeps, ReusableRoutes } from '../routes/compile.ts';
import type { GatewayMiddleware } from '../middleware/deps.ts';
import { internalFailure, respondError } from '../pipeline/compose.ts';
import { HttpContext, type RequestObserver } from '../pipeline/context.ts';
import type { Counters } from '../limits/counters.ts';
import { LimitsGuard } from '../limits/guard.ts';
import { Sessions } from '../sessions/sessions.ts';
import { GatewayError } from '../pipeline/errors.ts';
import { normalizeHost, RouteTable, type ListenerKey } from '../pipeline/router.ts';
import { splitTarget } from '../pipeline/url.ts';
import type { Collection, Store } from '../store/store.ts';
import { Dispatchers } from '../upstream/dispatchers.ts';
import { joinObservers, Metrics } from '../metrics/metrics.ts';
import { analyticsOf, type Analytics } from '../analytics/analytics.ts';
import { FastPath } from './fast-path/index.ts';
import { StreamsEngine } from '../streams/engine.ts';
import { ottoWriteProblems } from '../plugins/otto.ts';
import { bentoMissing, bentoPath } from '../../lib/bento/binary.ts';
import { serveUpgrade } from '../streams/upgrade.ts';
import { Listeners, type OpenListener } from './listeners.ts';
import { prepareReload, reloadSwapped, type ReloadResult } from './reload.ts';
import { TcpProxies } from '../tcp/index.ts';
import { localBus, type NodeBus } from './node-bus.ts';
import { lowestBindablePort, probedLowestPort } from './port-privilege.ts';
import { Applied } from '../nodes/applied.ts';
import { PolicyRevisions } from '../nodes/policies.ts';
import { localRegistry, type NodeInfo, type NodeRegistry } from '../nodes/registry.ts';
import type { IdleRelease } from './memory.ts';

/** First retry of a start-up load that failed because the store didn't answer; doubles to 15 s. */
const FIRST_RETRY_MS = 500;
const MAX_RETRY_MS = 15_000;
/** Longest a stop waits to leave the registry of gateways (gateway/nodes/). */
const LEAVE_TIMEOUT_MS = 1_000;

/** What a gateway process is built from. */
export interface GatewayOptions {
  config: Readonly<GatewayConfig>;
  store: Store;
  /** Counters of limits and quotas (in memory with the files store, else in Redis). */
  counters: Counters;
  log: Logger;
  tls?: TlsMaterial | undefined;
  /** How `/svc/reload` reaches the other processes of this node (default: this process only). */
  bus?: NodeBus;
  /** The middleware chain (default: pipeline/chain.ts). */
  chain?: readonly GatewayMiddleware[];
  now?: () => number;
  /** Sees every routed request on both entrances (metrics, access log, events). */
  observer?: RequestObserver | undefined;
  /**
   * The process's Prometheus metrics: they observe every request, middleware record limits in
   * them, `/metrics` prints them. Default: new ones when `metrics_enabled`.
   */
  metrics?: Metrics | undefined;
  /**
   * How this process is named in the registry of gateways (gateway/nodes/). Default:
   * `<hostname>:<listen_port>`; main.ts adds the worker's number with `--workers` > 1.
   */
  nodeName?: string;
  /**
   * Gives freed memory back once the routes stop changing after a reload (server/memory.ts).
   * run.ts passes one to a serving process; none in-process (tests).
   */
  idleRelease?: IdleRelease;
}

/** A running gateway process. */
export class Gateway {
  /** Identifies this process in group messages. */
  readonly processId = randomUUID();
  readonly #config: Readonly<GatewayConfig>;
  readonly #store: Store;
  readonly #log: Logger;
  readonly #bus: NodeBus;
  readonly #env: CompileEnv;
  readonly #deps: CompileDeps;
  readonly #dispatchers: Dispatchers;
  readonly #listeners: Listeners;
  readonly #admin: Admin;
  readonly #fastPath: FastPath | undefined;
  readonly #sessions: Sessions;
  readonly #observer: RequestObserver | undefined;
  readonly #metrics: Metrics | undefined;
  readonly #analytics: Analytics | undefined;
  /** Streams on Bento (gateway/streams/): started with the first API with streams. */
  readonly #streams: StreamsEngine;
  /** TCP and TLS APIs (gateway/tcp/): their ports follow the reloads with the HTTP ones. */
  readonly #tcp: TcpProxies;
  #table = new RouteTable([]);
  /** The routes of `#table` the next reload may reuse (unchanged stored text). */
  #reusable: ReusableRoutes = new Map();
  /** Per-API certificates by SNI, swapped with the table (certs/sni.ts). */
  #sni = new SniTable();
  #ready = false;
  #stopped = false;
  #running: Promise<ReloadReport> | undefined;
  #queued: Promise<ReloadReport> | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  #unsubscribe: (() => void) | undefined;
  /** The revisions this process serves, and where the other gateways find them (gateway/nodes/). */
  /**
   * Also the APIs the last reload that swapped its table left out, and why (`GET /svc/applied`,
   * and in mode pro the dashboard's `GET /api/nodes/apis/{id}`): the dashboard can't check what
   * only this gateway has (its plugin files), so this is where a user finds why one is not served.
   */
  readonly #applied = new Applied();
  /** When this process applies each policy (it forgot the one before): gateway/nodes/policies.ts. */
  readonly #policyRevisions: PolicyRevisions;
  readonly #node: NodeInfo;
  readonly #registry: NodeRegistry;
  #heartbeat: NodeJS.Timeout | undefined;
  readonly #idleRelease: IdleRelease | undefined;

  private constructor(opts: GatewayOptions) {
    const { config, store, log } = opts;
    this.#config = config;
    this.#idleRelease = opts.idleRelease;
    this.#node = {
      id: this.processId,
      name: opts.nodeName ?? `${hostname()}:${String(config.listen_port)}`,
      pid: process.pid,
      started_at: new Date().toISOString(),
    };
    this.#registry =
      store.nodeRegistry?.({ timeoutMs: config.node_timeout_ms }) ??
      localRegistry(() => ({ info: this.#node, applied: this.#applied }));
    this.#store = store;
    this.#log = log;
    this.#policyRevisions = new PolicyRevisions({
      store,
      docs: this.#applied.policies,
      publish: () => this.#registry.publish(this.#node, this.#applied),
      now: Date.now,
      log,
    });
    this.#bus = opts.bus ?? localBus();
    // Metrics (gateway/metrics/): one registry per process, observing both entrances.
    this.#metrics = opts.metrics ?? (config.metrics_enabled ? new Metrics() : undefined);
    // Analytics (gateway/analytics/): in mode pro, a record of every request to the dashboard.
    this.#analytics = analyticsOf(config, log, this.#metrics?.registry);
    this.#observer = joinObservers(joinObservers(opts.observer, this.#metrics), this.#analytics);
    this.#env = {
      listenPort: config.listen_port,
      controlPort: config.control_port,
      tls: opts.tls !== undefined,
      httpsPort: config.https_port,
      jsvm: config.enable_jsvm,
      lowestPort: lowestBindablePort(),
      streaming: () => {
        if (!config.streaming_enabled)
          return 'streaming is disabled on this gateway: set streaming_enabled (SVC_GW_STREAMING_ENABLED=true)';
        return bentoMissing(bentoPath(config.streaming_bento_path));
      },
    };
    this.#sessions = new Sessions(store, { log, now: opts.now ?? Date.now });
    this.#dispatchers = new Dispatchers({
      connectTimeoutMs: config.upstream_connect_timeout_ms,
      timeoutMs: config.upstream_timeout_ms,
    });
    this.#streams = new StreamsEngine({ config, log, registry: this.#metrics?.registry });
    this.#deps = {
      streams: this.#streams,
      store,
      counters: opts.counters,
      limits: new LimitsGuard({ failOpen: config.limits_fail_open, log: log.child({ part: 'limits' }) }),
      sessions: this.#sessions,
      log,
      config,
      now: opts.now ?? Date.now,
      changed: (collection, id) => this.changed(collection, id),
      chain: opts.chain ?? defaultChain,
      dispatchers: this.#dispatchers,
      metrics: this.#metrics,
    };
    this.#tcp = new TcpProxies({
      host: config.listen_address,
      tls: opts.tls,
      store,
      secret: config.secret,
      counters: opts.counters,
      limits: this.#deps.limits,
      log,
      connectTimeoutMs: config.upstream_connect_timeout_ms,
      handshakeTimeoutMs: config.tls_handshake_timeout_ms,
      shutdownTimeoutMs: config.shutdown_timeout_ms,
      metrics: this.#metrics,
    });
    this.#fastPath = config.fast_path
      ? new FastPath({
          table: () => this.#table,
          adminOwns: (path) => this.#admin.owns(path),
          connectTimeoutMs: config.upstream_connect_timeout_ms,
          timeoutMs: config.upstream_timeout_ms,
          log,
          observer: this.#observer,
        })
      : undefined;
    this.#listeners = new Listeners({
      fastPath: this.#fastPath,
      host: config.listen_address,
      tls: opts.tls,
      trustForwarded: config.trust_forwarded_headers,
      sni: (servername, port) => this.#sni.lookup(servername, port),
      handler: (req, res, l) => {
        this.#handle(req, res, l);
      },
      upgrade: (req, socket, head, l) => {
        serveUpgrade(req, socket, head, (r, s) => {
          this.#handle(r, s, l);
        });
      },
      log,
    });
    this.#admin = new Admin({
      secret: config.secret,
      store,
      env: this.#env,
      log: log.child({ part: 'admin' }),
      version: pkg.version,
      reloadNode: () => this.#bus.reloadNode(),
      reloadGroup: () => this.reloadGroup(),
      changed: (collection, id) => this.changed(collection, id),
      counters: opts.counters,
      sessions: this.#sessions,
      now: this.#deps.now,
      allowExplicitPolicyId: config.policies_allow_explicit_policy_id,
      isReady: () => this.#ready && this.#streams.healthy,
      notReady: () => (this.#ready ? this.#streams.notReady : undefined),
      streamProblems: (id, doc) => this.#streams.writeProblems(id, doc),
      applied: () => ({
        node: this.#node,
        apis: this.#applied.all('apis'),
        policies: this.#applied.all('policies'),
        left_out: { ...this.#applied.leftOut() },
      }),
      nodes: (of) => this.#registry.list(of),
      pluginProblems: (api) =>
        ottoWriteProblems(api, {
          pluginDir: config.plugin_dir,
          jsvm: config.enable_jsvm,
          timeoutMs: config.plugin_timeout_ms,
        }),
      explain: (input) =>
        explain(input, { table: this.#table, deps: this.#deps, stages, log: log.child({ part: 'explain' }) }),
      // `/metrics` reports every process of the node (node-bus.ts).
      // Bento's stream series follow, once: it is the node's (streams/engine.ts).
      metrics:
        this.#metrics === undefined
          ? undefined
          : async () => {
              const [node, bento] = await Promise.all([
                this.#bus.nodeMetrics(),
                this.#streams.bentoMetrics(),
              ]);
              return node + bento;
            },
    });
  }

  /**
   * Opens the gateway (and management) port, subscribes to group messages and loads the routes.
   * A store that doesn't answer yet is retried in the background; `/ready` says when routes
   * are in.
   */
  static async start(opts: GatewayOptions): Promise<Gateway> {
    const gw = new Gateway(opts);
    const { config } = opts;
    // The kernel's word on privileged ports, before the first routes are checked against it.
    gw.#env.lowestPort = await probedLowestPort(config.listen_address, gw.#env.lowestPort ?? 1);
    try {
      if (config.control_port !== undefined) {
        await gw.#listeners.open({
          key: 'control',
          role: 'control',
          port: config.control_port,
          protocol: config.control_tls ? 'https' : 'http',
          admin: true,
        });
      }
      gw.#bus.serve(() => gw.reloadLocal());
      if (gw.#metrics !== undefined) gw.#bus.serveMetrics(gw.#metrics);
      gw.#bus.onChanged((collection, id) => {
        gw.#forget(collection, id);
      });
      gw.#unsubscribe = opts.store.subscribe((m) => {
        if (m.origin === gw.processId) return;
        if (m.type === 'changed') {
          // A write the store made itself (mode pro: the tokens of a client deleted in the
          // dashboard): the other processes may hold it too, and may not learn of it otherwise
          // (another one may have deleted the same tokens first, and find none to name).
          if (m.spread === true) {
            gw.changed(m.collection, m.id).catch((err: unknown) => {
              gw.#log.warn('a change not told to the other gateways', { error: errorMessage(err) });
            });
            return;
          }
          gw.#forget(m.collection, m.id);
          // The other processes of this node share the message only through this one's bus
          // when the store is not shared (files); a shared store tells each of them itself.
          return;
        }
        gw.#log.info('group reload received', { origin: m.origin });
        void gw.reloadLocal();
      });
      await opts.store.subscribed();
    } catch (err) {
      await gw.stop();
      throw err;
    }
    // The routes are loaded before the ports serving them open: a worker started late (one
    // replacing a worker that died) would otherwise take its share of the node's connections
    // and answer 404 until its routes are there.
    const first = await gw.reloadLocal();
    try {
      await gw.#listeners.open({
        key: 'main',
        role: 'gateway',
        port: config.listen_port,
        protocol: 'http',
        admin: config.control_port === undefined,
      });
      if (config.https_port !== undefined && gw.#listeners.get(config.https_port) === undefined) {
        // The HTTPS ingress port answers from the start (404 for unknown hosts), not only once
        // an API asks for it: a port that refuses connections until the first TLS API makes
        // load balancers and `kubectl port-forward` give up on it. The first reload opens it,
        // unless the store could not be read.
        await gw.#listeners.open({
          key: config.https_port,
          role: 'api',
          port: config.https_port,
          protocol: 'https',
          admin: false,
        });
      }
    } catch (err) {
      await gw.stop();
      throw err;
    }
    gw.#policyRevisions.loadAll();
    if (!first.ok && first.retry === true) gw.#retryStart(FIRST_RETRY_MS);
    let failing = false;
    gw.#heartbeat = setInterval(() => {
      gw.#registry.heartbeat(gw.#node, gw.#applied).then(
        () => {
          if (failing) gw.#log.info('node heartbeat back');
          failing = false;
        },
        (err: unknown) => {
          // Once per outage, not once per heartbeat.
          if (!failing) gw.#log.warn('node heartbeat failed', { error: errorMessage(err) });
          failing = true;
        },
      );
    }, config.node_heartbeat_interval_ms);
    gw.#heartbeat.unref();
    return gw;
  }

  /** The bound port of a listener: `main`, `control`, or an API port. */
  port(key: ListenerKey | 'control'): number | undefined {
    return this.#listeners.get(key)?.port;
  }

  /** True once routes have loaded successfully. */
  get ready(): boolean {
    return this.#ready;
  }

  /** The process's metrics, when kept. */
  get metrics(): Metrics | undefined {
    return this.#metrics;
  }

  /** The gateway's streams (state of Bento, for `/ready`, metrics and tests). */
  get streams(): StreamsEngine {
    return this.#streams;
  }

  /** The table serving now. */
  get table(): RouteTable {
    return this.#table;
  }

  /**
   * Reloads this process. Reloads don't overlap: a request during a reload waits for it, then one
   * more reload covers every request that came meanwhile.
   */
  reloadLocal(): Promise<ReloadResult> {
    if (this.#queued !== undefined) return this.#queued;
    if (this.#running !== undefined) {
      this.#queued = this.#running.then(() => {
        this.#queued = undefined;
        return this.#track();
      });
      return this.#queued;
    }
    return this.#track();
  }

  /** Reloads every node sharing the store: through the store when shared, else this node. */
  async reloadGroup(): Promise<ReloadReport> {
    if (!this.#store.shared) return this.#bus.reloadNode();
    await this.#store.publish({ type: 'reload', origin: this.processId });
    return this.reloadLocal();
  }

  /**
   * A key or policy was written through this process: every process that may have cached it
   * forgets it (this one, the other workers of the node, the other nodes on a shared store).
   */
  async changed(collection: Collection, id: string): Promise<void> {
    this.#forget(collection, id);
    // The other workers of this node have forgotten it when this resolves (node-bus.ts).
    const node = this.#bus.changed(collection, id);
    if (this.#store.shared) {
      await this.#store.publish({ type: 'changed', origin: this.processId, collection, id });
    }
    await node;
  }

  #forget(collection: Collection, id: string): void {
    this.#store.forget(collection, id);
    this.#sessions.forget(collection, id);
    if (collection === 'policies') this.#policyRevisions.changed(id);
  }

  /** Stops accepting, lets requests in flight finish (up to the shutdown timeout), frees pools. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    clearTimeout(this.#retryTimer);
    clearInterval(this.#heartbeat);
    this.#idleRelease?.close();
    this.#policyRevisions.close();
    // A clean stop leaves the registry at once: the operator need not wait for the timeout.
    // A store that does not answer does not hold the stop: the entry then expires by itself.
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.#registry.leave(this.#node),
      new Promise((resolve) => {
        timer = setTimeout(resolve, LEAVE_TIMEOUT_MS);
      }),
    ])
      .catch((err: unknown) => {
        this.#log.warn('leaving the node registry failed', { error: errorMessage(err) });
      })
      .finally(() => {
        clearTimeout(timer);
      });
    this.#unsubscribe?.();
    this.#bus.close();
    await Promise.all([this.#listeners.closeAll(this.#config.shutdown_timeout_ms), this.#tcp.close()]);
    this.#fastPath?.close();
    await this.#analytics?.close();
    void this.#table.retire();
    await this.#dispatchers.close();
    await this.#streams.stop();
  }

  #track(): Promise<ReloadResult> {
    const run = this.#reloadOnce().finally(() => {
      this.#running = undefined;
    });
    this.#running = run;
    return run;
  }

  #retryStart(delayMs: number): void {
    if (this.#stopped || this.#ready) return;
    this.#retryTimer = setTimeout(() => {
      void this.reloadLocal().then((r) => {
        if (!r.ok && r.retry === true) this.#retryStart(Math.min(delayMs * 2, MAX_RETRY_MS));
      });
    }, delayMs);
  }

  async #reloadOnce(): Promise<ReloadResult> {
    if (this.#stopped) return { ok: false, message: 'gateway stopping' };
    const p = await prepareReload(
      {
        config: this.#config,
        store: this.#store,
        streams: this.#streams,
        env: this.#env,
        deps: this.#deps,
        tcp: this.#tcp,
        listeners: this.#listeners,
        log: this.#log,
      },
      this.#reusable,
    );
    if (!p.ok) return p.report;
    const { built } = p;
    // The swap: from here on new requests use the new table; the old one is closed once the
    // requests running on it have finished.
    const old = this.#table;
    this.#table = built.table;
    this.#reusable = built.reusable;
    this.#sni = p.sni;
    p.tcp.commit();
    built.problems.push(...p.tcp.problems);
    // The first load's memory is given back before serving (run.ts); a reload's once quiet.
    if (this.#ready) this.#idleRelease?.changed();
    this.#ready = true;
    // What this process serves now, for the operator (gateway/nodes/): an API left out is not.
    this.#applied.apis.swapped(p.entries, new Set(built.problems.map((x) => x.api_id)), Date.now());
    this.#applied.apisLeftOut = Object.fromEntries(built.problems.map((x) => [x.api_id, x.message]));
    await this.#registry.publish(this.#node, this.#applied).catch((err: unknown) => {
      this.#log.warn('publishing the applied revisions failed', { error: errorMessage(err) });
    });
    void old.retire().catch((err: unknown) => {
      this.#log.warn('closing retired routes failed', { error: errorMessage(err) });
    });
    return reloadSwapped(p, this.#listeners, this.#log);
  }

  #handle(req: IncomingMessage, res: ServerResponse, l: OpenListener): void {
    if (l.closing) res.shouldKeepAlive = false;
    const { path, query } = splitTarget(req.url ?? '/');
    if (l.admin && (l.role === 'control' || this.#admin.owns(path))) {
      void this.#admin.handle(req, res, path);
      return;
    }
    const key: ListenerKey = l.key === 'control' ? 'main' : l.key;
    const route = this.#table.match(key, normalizeHost(req.headers.host), path);
    if (route === undefined) {
      respondError({ res, responseHeaders: {} }, GatewayError.noRoute());
      return;
    }
    const ctx = new HttpContext({ req, res, route, listener: l.info, path, query, log: this.#log });
    const table = this.#table;
    const observer = this.#observer;
    table.enter();
    observer?.onRequest?.(ctx);
    route
      .handle(ctx)
      .catch((err: unknown) => {
        respondError(ctx, internalFailure(ctx, err));
      })
      .finally(() => {
        table.leave();
        observer?.onResponse?.(ctx, res.headersSent ? res.statusCode : 0);
      });
  }
}
