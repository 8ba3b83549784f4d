/**
 * `kubectl svc explain` as a person reads it: the match, one row per middleware in chain order
 * (its decision and what it found), the session and the policies merged into it, and the answer.
 * Pure: the gateway's JSON in, text out.
 */

/** The gateway's explanation (gateway/server/explain.ts), as much as the table prints. */
export interface ExplanationView {
  matched: null | { api_id: string; name: string; listen_path: string; why: string; version?: string };
  steps: {
    middleware: string;
    stage: string;
    decision: string;
    status?: number;
    message?: string;
    details: Record<string, unknown>;
  }[];
  session?: {
    key_id: string;
    apply_policies: string[];
    merged: Record<string, unknown>;
    policies: Record<string, unknown>[];
  };
  answer: { status: number; body: string; proxied_to?: string };
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
  if (refusing !== undefined) out.push(`By:       ${refusing.middleware} (${refusing.stage})`);
  return `${out.join('\n')}\n`;
}
