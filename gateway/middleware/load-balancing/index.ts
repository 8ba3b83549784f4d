/**
 * Load balancing over `proxy.target_list` (`enable_load_balancing`), with the upstreams' uptime
 * tests (`check_host_against_uptime_tests`, `uptime_tests`):
 * - each request goes to the next upstream of the list, round robin; the counter is the API's,
 *   kept per gateway process and shared by every request (both entrances);
 * - with `check_host_against_uptime_tests`, a checker of the API requests each URL of
 *   `uptime_tests.check_list` every `uptime_tests.config.recheck_wait` seconds (default 10): a
 *   check fails when its host can't be reached, does not answer within its `timeout`
 *   (milliseconds, default 5000; a Go duration in nanoseconds past 1e6) or answers outside 2xx.
 *   An upstream whose host (`host:port`) has a failing check is left out of the rotation until
 *   its check passes again; an upstream without a check is always in it. When every upstream is
 *   out, the request gets 503 `All upstream hosts are down`.
 * - an upstream a middleware chose before (a version's `override_target`, a URL rewrite to
 *   another host) wins: load balancing leaves it.
 * The checker is the compiled middleware's resource: it stops when the route closes (a route is
 * reused across reloads while its definition is unchanged, and its checker with it).
 */
import type { GatewayApiDefinition } from '../../../schemas/generated/models.ts';
import { balancedTargets } from '../../../schemas/rules/api-definition.ts';
import { isTargetProblem, parseTarget } from '../../../schemas/rules/target.ts';
import { reject } from '../../pipeline/compose.ts';
import { around } from '../../pipeline/steps.ts';
import type { GatewayMiddleware } from '../deps.ts';
import { GatewayError } from '../../pipeline/errors.ts';
import type { Target } from '../../pipeline/router.ts';

/** Seconds between two rounds of checks when `recheck_wait` is not set. */
const DEFAULT_INTERVAL_S = 10;
const DEFAULT_TIMEOUT_MS = 5000;

/** One uptime check, compiled. */
export interface UptimeCheck {
  url: string;
  /** `host:port` of the URL, lower case: the upstreams it speaks for. */
  host: string;
  method: string;
  headers: Record<string, string>;
  body: string | undefined;
  timeoutMs: number;
}

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** The `host:port` an upstream and a check are matched by. */
function hostKey(t: Target): string {
  const u = new URL(t.origin);
  const port = u.port !== '' ? u.port : u.protocol === 'https:' ? '443' : '80';
  return `${u.hostname.toLowerCase()}:${port}`;
}

/** The checks of `api`, compiled (only with `check_host_against_uptime_tests`). */
export function compileChecks(api: GatewayApiDefinition): UptimeCheck[] {
  if (api.proxy.check_host_against_uptime_tests !== true) return [];
  const out: UptimeCheck[] = [];
  for (const c of api.uptime_tests?.check_list ?? []) {
    const raw = typeof c.url === 'string' ? c.url : '';
    const t = raw === '' ? undefined : parseTarget(raw);
    if (t === undefined || isTargetProblem(t)) continue;
    const timeout = num(c.timeout);
    const headers: Record<string, string> = {};
    if (c.headers !== null && typeof c.headers === 'object') {
      for (const [k, v] of Object.entries(c.headers)) if (typeof v === 'string') headers[k] = v;
    }
    out.push({
      url: /^[a-z][a-z0-9+.-]*:\/\//i.test(raw) ? raw : `http://${raw}`,
      host: hostKey(t),
      method: typeof c.method === 'string' && c.method !== '' ? c.method.toUpperCase() : 'GET',
      headers,
      body: typeof c.body === 'string' && c.body !== '' ? c.body : undefined,
      timeoutMs:
        timeout === undefined || timeout <= 0
          ? DEFAULT_TIMEOUT_MS
          : timeout > 1e6
            ? Math.ceil(timeout / 1e6)
            : timeout,
    });
  }
  return out;
}

/** Whether one check passes now. */
async function probe(check: UptimeCheck): Promise<boolean> {
  try {
    const res = await fetch(check.url, {
      method: check.method,
      headers: check.headers,
      ...(check.body === undefined ? {} : { body: check.body }),
      signal: AbortSignal.timeout(check.timeoutMs),
      redirect: 'manual',
    });
    await res.body?.cancel();
    return res.status >= 200 && res.status < 300;
  } catch {
    return false;
  }
}

/**
 * Runs an API's checks every `intervalMs` and keeps the hosts whose check fails. The first round
 * starts at once; a round does not start while the previous one runs.
 */
export class UptimeChecker {
  readonly #checks: readonly UptimeCheck[];
  readonly #down = new Set<string>();
  readonly #timer: NodeJS.Timeout;
  readonly #onChange: (host: string, up: boolean) => void;
  #running = false;
  #closed = false;
  /** Rounds completed (tests wait on it). */
  rounds = 0;

  constructor(
    checks: readonly UptimeCheck[],
    intervalMs: number,
    onChange: (host: string, up: boolean) => void,
  ) {
    this.#checks = checks;
    this.#onChange = onChange;
    this.#timer = setInterval(() => void this.round(), intervalMs);
    this.#timer.unref();
    void this.round();
  }

  /** Whether an upstream of `host` (`host:port`) is out of rotation. */
  isDown(host: string): boolean {
    return this.#down.has(host);
  }

  /** One round of every check. */
  async round(): Promise<void> {
    if (this.#running || this.#closed) return;
    this.#running = true;
    try {
      const results = await Promise.all(this.#checks.map(async (c) => ({ c, ok: await probe(c) })));
      if (this.closed) return;
      // A host is down when any of its checks fails.
      const failing = new Set(results.filter((r) => !r.ok).map((r) => r.c.host));
      for (const { c } of results) {
        const was = this.#down.has(c.host);
        const now = failing.has(c.host);
        if (was === now) continue;
        if (now) this.#down.add(c.host);
        else this.#down.delete(c.host);
        this.#onChange(c.host, !now);
      }
      this.rounds++;
    } finally {
      this.#running = false;
    }
  }

  close(): void {
    this.#closed = true;
    clearInterval(this.#timer);
  }

  get closed(): boolean {
    return this.#closed;
  }
}

/** The checkers of the routes open now (tests look at them). */
export const openCheckers = new Set<UptimeChecker>();

/** See the module comment. */
export const loadBalancing: GatewayMiddleware = {
  name: 'load-balancing',
  enabled: (api) => balancedTargets(api).length > 0,
  create: (api, deps) => {
    const targets = balancedTargets(api);
    if (targets.length === 0) throw new Error('load-balancing: compiled for an API without target_list');
    const hosts = targets.map(hostKey);
    const checks = compileChecks(api);
    const wait = num(api.uptime_tests?.config?.recheck_wait);
    const intervalMs = (wait !== undefined && wait > 0 ? wait : DEFAULT_INTERVAL_S) * 1000;
    const checker =
      checks.length === 0
        ? undefined
        : new UptimeChecker(checks, intervalMs, (host, up) => {
            deps.log.warn(up ? 'upstream host back up' : 'upstream host down', {
              api_id: api.api_id,
              host,
            });
          });
    if (checker !== undefined) openCheckers.add(checker);
    let next = 0;
    return around(
      async (ctx, proceed) => {
        if (ctx.upstream.target === undefined) {
          let chosen: Target | undefined;
          let left = targets.length;
          while (left-- > 0) {
            const i = next;
            next = (next + 1) % targets.length;
            if (checker?.isDown(hosts[i] ?? '') === true) continue;
            chosen = targets[i];
            break;
          }
          if (chosen === undefined) {
            return reject(ctx, new GatewayError('GW_ERR_ALL_HOSTS_DOWN', 503, 'All upstream hosts are down'));
          }
          ctx.upstream.target = chosen;
        }
        await proceed();
        return undefined;
      },
      {
        close: () => {
          if (checker === undefined) return;
          checker.close();
          openCheckers.delete(checker);
        },
      },
    );
  },
};
