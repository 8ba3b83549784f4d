/**
 * `POST /svc/explain` (`kubectl svc explain`): how this gateway would answer a request, without
 * answering it. The request's route is matched as `#handle` matches it; the API's chain is
 * compiled again, for this request alone, with dry-run dependencies (counters read, never
 * written: a rate check reports what is left of its window, a quota its count as it stands;
 * no events delivered, no metrics kept); each step is wrapped so that its decision is recorded
 * in chain order; the upstream call is replaced by a note of where it would go. Nothing reaches
 * the upstream and no counter moves, so a real request afterwards gets what it would have got.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Logger } from '../../lib/log.ts';
import { compileChain, errorBody, runChain } from '../pipeline/compose.ts';
import { RequestContext } from '../pipeline/context.ts';
import type { Step } from '../pipeline/middleware.ts';
import { normalizeHost, type RouteTable } from '../pipeline/router.ts';
import { splitTarget } from '../pipeline/url.ts';
import type { Counters, QuotaUse, RateVerdict } from '../limits/counters.ts';
import type { CompileDeps } from '../routes/compile.ts';
import type { GatewaySession } from '../../schemas/generated/models.ts';
import { upstreamPathOf } from '../upstream/proxy.ts';

/** The request to explain. */
export interface ExplainInput {
  method: string;
  /** Path and query (`/orders/1?x=1`); a full URL's host becomes the Host header. */
  url: string;
  headers: Record<string, string>;
  /** The client address the IP lists see (default 127.0.0.1). */
  clientIp?: string | undefined;
}

/** A counter a step consulted, read and not changed. */
export interface CounterRead {
  kind: 'rate' | 'quota';
  name: string;
  limit?: number;
  windowSeconds?: number;
  /** Rate: requests left in the window after this one (0 when it would be refused). */
  remaining?: number;
  /** Quota: requests counted in the current period (this one not included). */
  used?: number;
}

/** One middleware's decision. */
export interface StepDecision {
  middleware: string;
  stage: string;
  decision: 'passed' | 'refused' | 'answered';
  status?: number;
  message?: string;
  /** What the step set or read: identity, counters, version. */
  details: Record<string, unknown>;
}

/** The explanation. */
export interface Explanation {
  matched: null | {
    api_id: string;
    name: string;
    listen_path: string;
    domain: string | null;
    why: string;
    version?: string;
  };
  steps: StepDecision[];
  session?: {
    key_id: string;
    identity_from_base?: boolean;
    apply_policies: string[];
    merged: Record<string, unknown>;
    policies: Record<string, unknown>[];
  };
  answer: { status: number; body: string; proxied_to?: string };
}

/** The dependencies: the route table serving now, the compile dependencies, names of stages. */
export interface ExplainDeps {
  table: RouteTable;
  deps: CompileDeps;
  stages: readonly { stage: string; middleware: readonly { name: string }[] }[];
  log: Logger;
}

/** Counters that read instead of counting; every read is noted in `reads`. */
function dryCounters(real: Counters, reads: CounterRead[]): Counters {
  const quotaRead = async (name: string): Promise<QuotaUse> => {
    const now = await real.peekQuota(name);
    reads.push({ kind: 'quota', name, used: now?.used ?? 0 });
    return { used: (now?.used ?? 0) + 1, ttlMs: now?.ttlMs ?? 0 };
  };
  const rateRead = async (name: string, limit: number, windowMs: number): Promise<RateVerdict> => {
    const v = await real.peekRate(name, limit, windowMs);
    reads.push({ kind: 'rate', name, limit, windowSeconds: windowMs / 1000, remaining: v.remaining });
    return v;
  };
  return {
    kind: real.kind,
    rate: rateRead,
    quota: (name) => quotaRead(name),
    // As the real step: the quota is counted (here, read) only when the rate check admits.
    rateThenQuota: async (rate, quota) => {
      const v = await rateRead(rate.name, rate.limit, rate.windowMs);
      return { rate: v, quota: v.allowed ? await quotaRead(quota.name) : undefined };
    },
    peekRate: (name, limit, windowMs) => real.peekRate(name, limit, windowMs),
    peekQuota: (name) => real.peekQuota(name),
    resetQuota: () => Promise.reject(new Error('dry run: no counter is reset')),
    resetGroup: () => Promise.reject(new Error('dry run: no counter is reset')),
    close: () => Promise.resolve(),
  };
}

/** The merged values of a session that a user reads to see how policies combined. */
function mergedView(s: GatewaySession): Record<string, unknown> {
  return {
    rate: s.rate,
    per: s.per,
    quota_max: s.quota_max,
    quota_renewal_rate: s.quota_renewal_rate,
    throttle_interval: s.throttle_interval,
    throttle_retry_limit: s.throttle_retry_limit,
    access_rights: s.access_rights,
  };
}

/** Explains `input` against the route table serving now. */
export async function explain(input: ExplainInput, d: ExplainDeps): Promise<Explanation> {
  const headers: IncomingHttpHeaders = {};
  for (const [k, v] of Object.entries(input.headers)) headers[k.toLowerCase()] = v;
  let target = input.url;
  const full = /^[a-z][a-z0-9+.-]*:\/\//i.exec(target);
  if (full) {
    const u = new URL(target);
    headers.host ??= u.host;
    target = `${u.pathname}${u.search}`;
  }
  const { path, query } = splitTarget(target);
  const method = input.method.toUpperCase();
  const route = d.table.match('main', normalizeHost(headers.host), path);
  if (route === undefined) {
    return {
      matched: null,
      steps: [],
      answer: { status: 404, body: JSON.stringify({ error: 'No API matches this host and path' }) },
    };
  }
  const reads: CounterRead[] = [];
  const events: { event: string; message: string }[] = [];
  const deps: CompileDeps = {
    ...d.deps,
    counters: dryCounters(d.deps.counters, reads),
    metrics: undefined,
    changed: undefined,
  };
  const api = route.api;
  const names: { name: string; stage: string }[] = [];
  for (const s of d.stages) {
    for (const m of s.middleware) names.push({ name: m.name, stage: s.stage });
  }
  const enabled = d.deps.chain.filter((m) => m.enabled(api, deps));
  const compiled = await compileChain(enabled, api, deps);
  const steps: StepDecision[] = [];
  let proxied: string | undefined;
  const ctx = new RequestContext({
    method,
    path,
    query,
    headers,
    socketAddress: input.clientIp ?? '127.0.0.1',
    route: {
      ...route,
      events: {
        emit: (e) => events.push({ event: e.event, message: e.message }),
        close: () => Promise.resolve(),
      },
    },
    listener: { protocol: 'http', trustForwarded: d.deps.config.trust_forwarded_headers },
    log: d.log,
  });
  const wrapped: Step[] = compiled.handlers.map((step, i) => {
    const m = enabled[i];
    const name = m?.name ?? `step ${i}`;
    const stage = names.find((n) => n.name === name)?.stage ?? '';
    return async (c, next) => {
      const readsBefore = reads.length;
      const eventsBefore = events.length;
      const hadSession = c.session !== undefined;
      const remainingBefore = c.responseHeaders['x-ratelimit-remaining'];
      let reached = false;
      const record = (): void => {
        const details: Record<string, unknown> = {};
        if (!hadSession && c.session !== undefined) {
          details.identity = c.state.keyId;
          if (c.session.apply_policies !== undefined) details.policies = c.session.apply_policies;
        }
        if (reads.length > readsBefore) details.counters = reads.slice(readsBefore);
        const remaining = c.responseHeaders['x-ratelimit-remaining'];
        // The step's own view of what is left (X-RateLimit-Remaining), as the client would see it.
        if (remaining !== undefined && remaining !== remainingBefore) details.remaining = Number(remaining);
        if (events.length > eventsBefore) details.events = events.slice(eventsBefore);
        if (c.state.version !== undefined && name === 'versions') details.version = c.state.version;
        const refusal = c.refusal?.rejected;
        const decision: StepDecision =
          refusal === undefined || reached
            ? { middleware: name, stage, decision: 'passed', details }
            : {
                middleware: name,
                stage,
                decision: refusal.replyBody === undefined ? 'refused' : 'answered',
                status: refusal.status,
                message: refusal.message,
                details,
              };
        steps.push(decision);
      };
      const run = async (): Promise<void> => {
        if (typeof step === 'function') {
          await step(c, async () => {
            reached = true;
            record();
            await next();
          });
          if (!reached) record();
          return;
        }
        const r = 'before' in step ? step.before(c) : await step.wait(c);
        if (r === undefined) {
          reached = true;
          record();
          await next();
        } else {
          record();
        }
      };
      await run();
    };
  });
  ctx.upstreamCall = () => {
    const t = ctx.upstream.target ?? route.target;
    // The path and query the upstream call would send (upstream/proxy.ts), disable_strip_slash included.
    const sent = t === undefined ? '' : upstreamPathOf(t, route, ctx.path, ctx.query, ctx.upstream.path);
    proxied = t === undefined ? '' : `${ctx.upstream.method ?? method} ${t.origin}${sent}`;
    return Promise.resolve();
  };
  try {
    const refused = await runChain(wrapped, ctx, () => ctx.upstreamCall?.() ?? Promise.resolve());
    const explanation: Explanation = {
      matched: {
        api_id: route.id,
        name: api.name,
        listen_path: api.proxy.listen_path,
        domain: route.domain ?? null,
        why:
          `path ${path} is under the listen path ${api.proxy.listen_path}` +
          (route.domain === undefined ? ' (any host)' : ` on host ${route.domain}`),
        ...(ctx.state.version === undefined ? {} : { version: ctx.state.version }),
      },
      steps,
      answer:
        refused === undefined
          ? { status: 200, body: '', proxied_to: proxied ?? '' }
          : {
              status: refused.rejected.status,
              body: String(errorBody(refused.rejected)),
            },
    };
    const s = ctx.session;
    if (s !== undefined) {
      const ids = s.apply_policies ?? [];
      const policies: Record<string, unknown>[] = [];
      for (const id of ids) {
        const p = (await d.deps.store.get('policies', id)) as Record<string, unknown> | undefined;
        if (p === undefined) continue;
        policies.push({
          id,
          name: p.name,
          rate: p.rate,
          per: p.per,
          quota_max: p.quota_max,
          throttle_interval: p.throttle_interval,
          throttle_retry_limit: p.throttle_retry_limit,
          partitions: p.partitions,
          access_rights: p.access_rights,
        });
      }
      explanation.session = {
        key_id: ctx.state.keyId ?? '',
        ...(ctx.state.identityFromBase === undefined
          ? {}
          : { identity_from_base: ctx.state.identityFromBase }),
        apply_policies: ids,
        merged: mergedView(s),
        policies,
      };
    }
    return explanation;
  } finally {
    await compiled.close();
  }
}
