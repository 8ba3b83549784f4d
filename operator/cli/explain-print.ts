/**
 * `kubectl svc explain` as a person reads it: the match, one row per middleware in chain order
 * (its decision and what it found), the session and the policies merged into it, and the answer.
 * A request handed on to another API of the gateway (an internal target, `svc://`: a Gateway API
 * dispatcher's, for one) shows each hop under the match, the API it reaches (its name carries the
 * SvcRoutePolicy that applies there), and the hop as a row between the two APIs' steps.
 * Pure: the gateway's JSON in, text out.
 */

/** The gateway's explanation (gateway/server/explain.ts), as much as the table prints. */
export interface ExplanationView {
  matched: null | MatchView;
  steps: {
    middleware: string;
    stage: string;
    decision: string;
    status?: number;
    message?: string;
    details: Record<string, unknown>;
    /** The API the step belongs to (when the request goes through several). */
    api_id?: string;
  }[];
  /** Internal targets followed, in order (gateway/server/explain.ts `ExplainHop`). */
  hops?: { from: string; target: string; method: string; path: string; matched: MatchView }[];
  session?: {
    key_id: string;
    apply_policies: string[];
    merged: Record<string, unknown>;
    policies: Record<string, unknown>[];
  };
  answer: { status: number; body: string; proxied_to?: string };
}

/** An API the request matched or was handed on to. */
export interface MatchView {
  api_id: string;
  name: string;
  listen_path: string;
  why: string;
  version?: string;
}

/** Rows padded into columns, separated by two spaces. */
export function columns(rows: readonly (readonly string[])[]): string {
  const widths: number[] = [];
  for (const r of rows) r.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, c.length)));
  return rows
    .map((r) =>
      r
        .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

interface CounterView {
  kind: string;
  name: string;
  limit?: number;
  windowSeconds?: number;
  remaining?: number;
  used?: number;
}

/** What a step found, in a few words. */
function detailText(d: Record<string, unknown>): string {
  const parts: string[] = [];
  if (typeof d.identity === 'string') parts.push(`identity ${d.identity}`);
  if (Array.isArray(d.policies) && d.policies.length > 0) parts.push(`policies ${d.policies.join(', ')}`);
  if (typeof d.version === 'string') parts.push(`version ${d.version}`);
  for (const c of (d.counters as CounterView[] | undefined) ?? []) {
    if (c.kind === 'quota') {
      parts.push(
        `quota ${c.name}: used ${c.used ?? 0}${c.remaining === undefined ? '' : `, remaining ${c.remaining}`}`,
      );
    } else {
      parts.push(
        `rate ${c.name}: ${c.limit ?? '?'} per ${c.windowSeconds ?? '?'}s${c.remaining === undefined ? '' : `, remaining ${c.remaining}`}`,
      );
    }
  }
  if (typeof d.remaining === 'number') parts.push(`remaining ${d.remaining}`);
  // A hop: the next API by ID (its name is on the Hop line above the table).
  const to = d.to as { api_id?: unknown } | undefined;
  if (typeof d.target === 'string' && to !== undefined) {
    parts.push(`${d.target} -> ${String(to.api_id)}`);
    if (typeof d.request === 'string') parts.push(`as ${d.request}`);
  } else if (typeof d.target === 'string') {
    parts.push(d.target);
  }
  for (const e of (d.events as { event: string }[] | undefined) ?? []) parts.push(`event ${e.event}`);
  return parts.join('; ');
}

/** The explanation as text. */
export function explanationTable(x: ExplanationView): string {
  const out: string[] = [];
  if (x.matched === null) {
    out.push('API:      none matches this host and path');
  } else {
    const m = x.matched;
    out.push(`API:      ${m.name} (${m.api_id}) at ${m.listen_path}`);
    out.push(`Why:      ${m.why}`);
    if (m.version !== undefined) out.push(`Version:  ${m.version}`);
  }
  (x.hops ?? []).forEach((h, i) => {
    const label = `Hop ${i + 1}:`.padEnd(10);
    out.push(`${label}${h.target} -> ${h.matched.name} (${h.matched.api_id}) at ${h.matched.listen_path}`);
    out.push(`${''.padEnd(10)}the request goes on as ${h.method} ${h.path} through that API's own chain`);
    if (h.matched.version !== undefined) out.push(`${''.padEnd(10)}version ${h.matched.version}`);
  });
  if (x.steps.length > 0) {
    out.push('');
    out.push(
      columns([
        ['STAGE', 'MIDDLEWARE', 'DECISION', 'DETAILS'],
        ...x.steps.map((s) => [
          s.stage,
          s.middleware,
          s.decision === 'passed' ? 'passed' : `${s.decision} ${s.status ?? ''} ${s.message ?? ''}`.trim(),
          detailText(s.details),
        ]),
      ]),
    );
  }
  if (x.session !== undefined) {
    const s = x.session;
    out.push('');
    out.push(`Key:      ${s.key_id}`);
    if (s.apply_policies.length > 0) {
      out.push(
        `Policies: ${s.apply_policies.join(', ')} (merged: rights united, highest quota, fastest rate)`,
      );
      const fields = ['rate', 'per', 'quota_max', 'throttle_interval', 'throttle_retry_limit'];
      const show = (v: unknown): string => (v === undefined ? '-' : JSON.stringify(v));
      const apis = (v: unknown): string =>
        v !== null && typeof v === 'object' ? Object.keys(v).join(',') || '-' : '-';
      out.push(
        columns([
          ['', 'POLICY', ...fields.map((f) => f.toUpperCase()), 'APIS'],
          ...s.policies.map((p) => [
            '',
            String(p.id),
            ...fields.map((f) => show(p[f])),
            apis(p.access_rights),
          ]),
          ['', 'merged', ...fields.map((f) => show(s.merged[f])), apis(s.merged.access_rights)],
        ]),
      );
    }
  }
  out.push('');
  const a = x.answer;
  out.push(
    a.proxied_to !== undefined
      ? `Answer:   proxied to ${a.proxied_to} (the upstream's answer)`
      : `Answer:   ${a.status} ${a.body}`,
  );
  const refusing = x.steps.find((s) => s.decision !== 'passed');
  if (refusing !== undefined) {
    // With hops, which API's chain refused.
    const api =
      refusing.api_id === undefined || x.hops === undefined
        ? undefined
        : [x.matched, ...x.hops.map((h) => h.matched)].find((m) => m?.api_id === refusing.api_id);
    out.push(
      `By:       ${refusing.middleware} (${refusing.stage})${api === undefined || api === null ? '' : ` of ${api.name} (${api.api_id})`}`,
    );
  }
  return `${out.join('\n')}\n`;
}
