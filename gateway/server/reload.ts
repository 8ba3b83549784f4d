/**
 * A reload's work before and after its swap (server/gateway.ts does the swap): every stored API
 * read, the new route table built with its streams and its certificates by SNI, the ports it
 * needs opened (and the TCP APIs' prepared); then what the reload reports. When the store fails
 * before the swap, what was opened is closed again and the old table keeps serving; a port that
 * another process holds leaves out the APIs on it, and the rest of the reload loads.
 */
import { errorMessage } from '../../lib/errors.ts';
import type { Logger } from '../../lib/log.ts';
import type { ReloadReport } from '../admin/index.ts';
import { buildSniTable, type SniTable } from '../certs/sni.ts';
import type { GatewayConfig } from '../config/schema.ts';
import { protocolOf, type CompileEnv } from '../routes/check.ts';
import {
  buildRouteTable,
  type BuildResult,
  type CompileDeps,
  type ReusableRoutes,
} from '../routes/compile.ts';
import type { Store, StoredEntry } from '../store/store.ts';
import type { StreamsEngine } from '../streams/engine.ts';
import type { TcpProxies, TcpSwap } from '../tcp/index.ts';
import type { Listeners } from './listeners.ts';

/** A reload's answer; `retry`: the store did not answer (a start-up load is tried again). */
export type ReloadResult = ReloadReport & { retry?: boolean };

/** What a reload reads and opens. */
export interface ReloadParts {
  config: Readonly<GatewayConfig>;
  store: Store;
  streams: StreamsEngine;
  env: CompileEnv;
  deps: CompileDeps;
  tcp: TcpProxies;
  listeners: Listeners;
  log: Logger;
}

/** A new table ready to swap in, with what it needs. */
export interface PreparedReload {
  ok: true;
  /** The stored APIs it was built from. */
  entries: StoredEntry[];
  built: BuildResult;
  sni: SniTable;
  tcp: TcpSwap;
  /** The API ports the table serves, by protocol (the others are closed after the swap). */
  wanted: Map<number, 'http' | 'https'>;
  /** The APIs whose streams do not run (still served). */
  streamProblems: { api_id: string; message: string }[];
}

/**
 * Builds the new table and opens what it needs; `{ ok: false }` with the report when the store
 * did not answer or the gateway's HTTPS port could not be opened (nothing is left open then). An
 * API whose own port can't be opened is left out, the port named.
 */
export async function prepareReload(
  parts: ReloadParts,
  reusable: ReusableRoutes,
): Promise<PreparedReload | { ok: false; report: ReloadResult }> {
  const { config, store, log, listeners } = parts;
  let entries;
  try {
    entries = await store.list('apis');
  } catch (err) {
    log.error('reload failed: store unavailable', { error: errorMessage(err) });
    return {
      ok: false,
      report: { ok: false, message: `store unavailable: ${errorMessage(err)}`, retry: true },
    };
  }
  const streamProblems = await parts.streams.update(entries);
  const built = await buildRouteTable(entries, parts.env, parts.deps, reusable);
  const table = built.table;
  let sni: SniTable;
  try {
    sni = await buildSniTable(
      table.routes.map((r) => r.api),
      store,
      config.secret,
      log,
    );
  } catch (err) {
    void table.retire();
    log.error('reload failed: store unavailable', { error: errorMessage(err) });
    return {
      ok: false,
      report: { ok: false, message: `store unavailable: ${errorMessage(err)}`, retry: true },
    };
  }
  const wanted = new Map<number, 'http' | 'https'>();
  for (const r of table.routes) if (r.listener !== 'main') wanted.set(r.listener, protocolOf(r.api));
  // The configured HTTPS port stays open and HTTPS, with or without APIs on it.
  if (config.https_port !== undefined) wanted.set(config.https_port, 'https');
  const opened: number[] = [];
  /** API ports another process holds, and why: their APIs are left out. */
  const unopened = new Map<number, string>();
  let tcp: TcpSwap | undefined;
  try {
    tcp = await parts.tcp.prepare(built.tcp, new Set(wanted.keys()), (port) => listeners.close(port));
    for (const [port, protocol] of wanted) {
      const current = listeners.get(port);
      if (current?.info.protocol === protocol) continue;
      if (current !== undefined) await listeners.close(port);
      try {
        await listeners.open({ key: port, role: 'api', port, protocol, admin: false });
        opened.push(port);
      } catch (err) {
        // The gateway's own HTTPS port is its configuration: without it the reload is refused.
        if (port === config.https_port) throw err;
        unopened.set(port, errorMessage(err));
      }
    }
  } catch (err) {
    for (const port of opened) await listeners.close(port);
    await tcp?.abort();
    void table.retire();
    log.error('reload refused, previous routes keep serving', { error: errorMessage(err) });
    return { ok: false, report: { ok: false, message: errorMessage(err) } };
  }
  for (const port of unopened.keys()) wanted.delete(port);
  return {
    ok: true,
    entries,
    built: unopened.size === 0 ? built : withoutPorts(built, unopened),
    sni,
    tcp,
    wanted,
    streamProblems,
  };
}

/**
 * The build without the APIs on `ports` (a port another process holds), each left out with the
 * port named: one held port costs its APIs only, never the other changes of the reload. Their
 * routes are not kept for the next reload, which tries the port again.
 */
function withoutPorts(built: BuildResult, ports: ReadonlyMap<number, string>): BuildResult {
  const out = built.table.routes.filter((r) => typeof r.listener === 'number' && ports.has(r.listener));
  const leftOut = new Set(out.map((r) => r.id));
  // Internal targets of the routes kept look up this table, not the full one.
  const table = built.without(leftOut);
  const reusable = new Map([...built.reusable].filter(([id]) => !leftOut.has(id)));
  const problems = [
    ...built.problems,
    ...out.map((r) => ({
      api_id: r.id,
      message: `listen_port: ${ports.get(r.listener as number) ?? 'cannot listen'}`,
    })),
  ];
  return { ...built, table, reusable, problems };
}

/**
 * After the swap: the API ports the new table does not serve are closed, and the reload's
 * warnings, the APIs left out and the streams not running are logged and reported.
 */
export function reloadSwapped(p: PreparedReload, listeners: Listeners, log: Logger): ReloadResult {
  const { built, streamProblems } = p;
  const table = built.table;
  for (const l of listeners.all()) {
    if (l.role === 'api' && typeof l.key === 'number' && !p.wanted.has(l.key)) void listeners.close(l.key);
  }
  for (const w of built.warnings) log.warn('routes loaded with a warning', { detail: w });
  log.info('routes loaded', { apis: table.routes.length, skipped: built.skipped.length });
  const notes: string[] = [];
  if (built.problems.length > 0) {
    const message = built.problems.map((p) => `API ${p.api_id}: ${p.message}`).join('; ');
    log.error('apis left out of the routes', { problems: built.problems });
    notes.push(`left out: ${message}`);
  }
  // An API whose streams do not run is still served (its other routes): not "left out".
  if (streamProblems.length > 0) {
    const message = streamProblems.map((p) => `API ${p.api_id}: ${p.message}`).join('; ');
    log.error('streams not running', { problems: streamProblems });
    notes.push(`streams not running: ${message}`);
  }
  if (notes.length > 0)
    return { ok: true, message: `loaded ${table.routes.length} APIs; ${notes.join('; ')}` };
  return { ok: true, message: '' };
}
