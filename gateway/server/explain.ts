/**
 * `POST /svc/explain` (`kubectl svc explain`): how this gateway would answer a request, without
 * answering it. The request's route is matched as `#handle` matches it; the API's chain is
 * compiled again, for this request alone, with dry-run dependencies (counters read, never
 * written: a rate check reports what is left of its window, a quota its count as it stands;
 * no events delivered, no metrics kept); each step is wrapped so that its decision is recorded
 * in chain order; the upstream call is replaced by a note of where it would go. Nothing reaches
 * the upstream and no counter moves, so a real request afterwards gets what it would have got.
 * An upstream that is another API of the gateway (an internal target, `svc://<api>/...`: a
 * Gateway API dispatcher's, for one) is followed as the real call follows it (the same path,
 * method, loop detection and hop bound, upstream/internal.ts): the next API's chain is explained
 * in turn, the hop is a step, `hops` names each API, and the answer is the last API's.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { Logger } from '../../lib/log.ts';
import { compileChain, errorBody, runChain } from '../pipeline/compose.ts';
import { RequestContext } from '../pipeline/context.ts';
import type { GatewayError } from '../pipeline/errors.ts';
import type { Step } from '../pipeline/middleware.ts';
import { normalizeHost, type Route, type RouteTable } from '../pipeline/router.ts';
import { splitTarget } from '../pipeline/url.ts';
import type { Counters, QuotaUse, RateVerdict } from '../limits/counters.ts';
import type { CompileDeps } from '../routes/compile.ts';
import type { GatewaySession } from '../../schemas/generated/models.ts';
import { upstreamPathOf } from '../upstream/proxy.ts';
import { markHandedOver, planInternalHop, type RouteLookup } from '../upstream/internal.ts';
import { isInternalTarget } from '../../schemas/rules/internal-target.ts';

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
  /**
   * The API whose chain the step belongs to; set on every step when the request goes through
   * more than one API (internal targets, `hops`).
   */
  api_id?: string;
}

/**
 * An internal target (`svc://<api>/...`) the request is handed on through: the next API runs its
 * own chain (its authentication, limits, policies) on the request, as the real call does.
 */
export interface ExplainHop {
  /** The API whose upstream is the internal target. */
  from: string;
  /** The target as that API sends to it (`GET svc://<api>/<path>`). */
  target: string;
  /** The method and the path and query the next API sees. */
  method: string;
  path: string;
  /** The next API, as `matched` reports the first one. */
  matched: NonNullable<Explanation['matched']>;
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
  /** In chain order, the steps of every API the request goes through; a hop is a step. */
  steps: StepDecision[];
  /**
   * The internal targets followed, in order (absent when there are none): `matched` stays the API
   * the client's request matched; `answer` and `session` are what the last API comes to.
   */
  hops?: ExplainHop[];
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

/** The route's match as the explanation reports it. */
function matchOf(
  route: Route,
  version: string | undefined,
  why: string,
): NonNullable<Explanation['matched']> {
  return {
    api_id: route.id,
    name: route.api.name,
    listen_path: route.api.proxy.listen_path,
    domain: route.domain ?? null,
    why,
    ...(version === undefined ? {} : { version }),
  };
}

/** What one API's chain came to in the dry run. */
type Outcome = { refused: GatewayError; ctx: RequestContext } | { proxied: string; ctx: RequestContext };

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
  const lookup: RouteLookup = (host) => d.table.byTarget(host);
  const deps: CompileDeps = {
    ...d.deps,
    counters: dryCounters(d.deps.counters, reads),
    metrics: undefined,
    changed: undefined,
    routes: d.deps.routes ?? lookup,
  };
  const names: { name: string; stage: string }[] = [];
  for (const s of d.stages) {
    for (const m of s.middleware) names.push({ name: m.name, stage: s.stage });
  }
  const steps: StepDecision[] = [];
  /** The API of each step (reported when the request went through more than one). */
  const stepApis: string[] = [];
  const hops: ExplainHop[] = [];
  const contexts: RequestContext[] = [];
  const closers: (() => Promise<void>)[] = [];

  /**
   * Runs one API's chain in the dry run, recording its steps; an internal target (`svc://`) at
   * its end is followed as the real call follows it (upstream/internal.ts `planInternalHop`:
   * the same path, method, loop and hop bound), into the next API's chain.
   */
  const runOn = async (
    on: Route,
    req: { method: string; path: string; query: string },
    from: { hops: readonly string[]; visited: ReadonlySet<string>; added: boolean } | undefined,
  ): Promise<Outcome> => {
    const api = on.api;
    const enabled = d.deps.chain.filter((m) => m.enabled(api, deps));
    const compiled = await compileChain(enabled, api, deps);
    closers.push(() => compiled.close());
    const ctx = new RequestContext({
      method: req.method,
      path: req.path,
      query: req.query,
      // One request through every API, as the real hop hands the same request on: what an API
      // did to the headers, the next one sees.
      headers,
      socketAddress: input.clientIp ?? '127.0.0.1',
      route: {
        ...on,
        events: {
          emit: (e) => events.push({ event: e.event, message: e.message }),
          close: () => Promise.resolve(),
        },
      },
      listener: { protocol: 'http', trustForwarded: d.deps.config.trust_forwarded_headers },
      log: d.log,
    });
    contexts.push(ctx);
    if (from !== undefined) markHandedOver(ctx, from.added);
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
          stepApis.push(on.id);
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
    let proxied: string | undefined;
    let followed: Outcome | undefined;
    ctx.upstreamCall = async () => {
      const t = ctx.upstream.target ?? on.target;
      // The path and query the upstream call would send (upstream/proxy.ts), disable_strip_slash included.
      const sent =
        t === undefined
          ? ''
          : upstreamPathOf(t, on, ctx.path, ctx.query, ctx.upstream.path, ctx.listenPathAdded);
      proxied = t === undefined ? '' : `${ctx.upstream.method ?? ctx.method} ${t.origin}${sent}`;
      if (t === undefined || !isInternalTarget(t)) return;
      const self = {
        listenPath: on.listenPath,
        strip: on.strip,
        keepSlash: on.keepSlash === true,
        self: () => on,
      };
      const hop = planInternalHop(ctx, t, self, lookup, from?.hops, from?.visited);
      if ('refused' in hop) {
        steps.push({
          middleware: 'internal-target',
          stage: 'upstream',
          decision: 'refused',
          status: hop.refused.status,
          message: hop.refused.message,
          details: { target: proxied },
        });
        stepApis.push(on.id);
        followed = { refused: hop.refused, ctx };
        return;
      }
      const matched = matchOf(hop.next, undefined, `internal target ${proxied} of ${on.api.name} (${on.id})`);
      hops.push({
        from: on.id,
        target: proxied,
        method: hop.method,
        path: `${hop.path}${hop.query}`,
        matched,
      });
      steps.push({
        middleware: 'internal-target',
        stage: 'upstream',
        decision: 'passed',
        details: {
          target: proxied,
          to: { api_id: hop.next.id, name: hop.next.api.name },
          request: `${hop.method} ${hop.path}${hop.query}`,
        },
      });
      stepApis.push(on.id);
      followed = await runOn(hop.next, { method: hop.method, path: hop.path, query: hop.query }, hop);
      if (followed.ctx.state.version !== undefined) matched.version = followed.ctx.state.version;
    };
    const refused = await runChain(wrapped, ctx, () => ctx.upstreamCall?.() ?? Promise.resolve());
    if (refused !== undefined) return { refused: refused.rejected, ctx };
    return followed ?? { proxied: proxied ?? '', ctx };
  };

  try {
    const outcome = await runOn(route, { method, path, query }, undefined);
    const first = contexts[0];
    if (hops.length > 0) steps.forEach((step, i) => (step.api_id = stepApis[i]));
    const explanation: Explanation = {
      matched: matchOf(
        route,
        first?.state.version,
        `path ${path} is under the listen path ${route.api.proxy.listen_path}` +
          (route.domain === undefined ? ' (any host)' : ` on host ${route.domain}`),
      ),
      steps,
      ...(hops.length === 0 ? {} : { hops }),
      answer:
        'proxied' in outcome
          ? { status: 200, body: '', proxied_to: outcome.proxied }
          : { status: outcome.refused.status, body: String(errorBody(outcome.refused)) },
    };
    // The session of the last API that authenticated the request (an internal API's own auth).
    const ctx = [...contexts].reverse().find((c) => c.session !== undefined);
    const s = ctx?.session;
    if (ctx !== undefined && s !== undefined) {
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
    for (const close of closers) await close();
  }
}
