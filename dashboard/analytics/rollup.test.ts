/**
 * The rollup of a batch (rollUp, summed per cell, then per row) gives the rows of its definition:
 * each record added to its rows in turn (the rollup of the dashboard before issue 34 item 5's
 * cells, kept here as the reference): the same rows in the same order, the same counts, labels
 * and names (keys beyond MAX_NAMES under OTHER), sums equal but for the rounding of fractions
 * added in another order.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { AnalyticsRecord, RefusalReason } from '../../schemas/rules/analytics.ts';
import {
  bucketOf,
  emptySums,
  isError,
  MAX_NAMES,
  OTHER,
  PERIODS,
  rollUp,
  type Dim,
  type Period,
  type RollupRow,
} from './rollup.ts';

/** Each record added to its rows in turn: the rollup as defined (rollup.ts's module comment). */
function referenceRollUp(records: readonly AnalyticsRecord[], weight: number): RollupRow[] {
  const rows = new Map<string, RollupRow>();
  const names = new Map<string, Set<string>>();
  const capped = (org: string, api: string, dim: Dim, name: string): string => {
    if (dim === 'api' || dim === 'reason') return name;
    const k = JSON.stringify([org, api, dim]);
    const seen = names.get(k) ?? new Set<string>();
    names.set(k, seen);
    if (seen.has(name)) return name;
    if (seen.size >= MAX_NAMES) return OTHER;
    seen.add(name);
    return name;
  };
  for (const r of records) {
    const targets: [Dim, string, string][] = [['api', '', '']];
    if (r.key !== '') targets.push(['key', r.key, r.alias]);
    targets.push(['endpoint', `${r.method} ${r.path}`, '']);
    if (r.refusal !== '') targets.push(['reason', r.refusal, '']);
    const named = targets.map(
      ([dim, raw, label]) => [dim, capped(r.org_id, r.api_id, dim, raw), label] as const,
    );
    for (const [period, ms] of Object.entries(PERIODS) as [Period, number][]) {
      const at = Math.floor(r.time / ms) * ms;
      for (const [dim, name, label] of named) {
        const id = JSON.stringify([r.org_id, period, at, r.api_id, dim, name]);
        let row = rows.get(id);
        if (row === undefined) {
          row = { org_id: r.org_id, period, at, api_id: r.api_id, dim, name, label, ...emptySums() };
          rows.set(id, row);
        }
        if (label !== '') row.label = label;
        row.requests += weight;
        row.errors += isError(r.status) ? weight : 0;
        row.latency_ms += r.latency_ms * weight;
        row.upstream_ms += r.upstream_latency_ms * weight;
        row.request_bytes += r.request_bytes * weight;
        row.response_bytes += r.response_bytes * weight;
        const b = bucketOf(r.latency_ms);
        row.hist[b] = (row.hist[b] ?? 0) + weight;
      }
    }
  }
  return [...rows.values()];
}

/** Numbers equal to a billionth (sums of fractions added in another order), the rest exactly. */
function assertSameRows(actual: RollupRow[], expected: RollupRow[], what: string): void {
  const close = (a: number, b: number): boolean => Math.abs(a - b) <= 1e-9 * Math.max(1, Math.abs(b));
  assert.equal(actual.length, expected.length, `${what}: rows`);
  for (let i = 0; i < expected.length; i++) {
    const a = actual[i];
    const e = expected[i];
    assert.ok(a !== undefined && e !== undefined);
    const where = `${what}: row ${String(i)} ${e.period} ${e.dim} ${e.name}`;
    assert.deepEqual(
      [a.org_id, a.period, a.at, a.api_id, a.dim, a.name, a.label],
      [e.org_id, e.period, e.at, e.api_id, e.dim, e.name, e.label],
      where,
    );
    const numbers = (r: RollupRow): number[] => [
      r.requests,
      r.errors,
      r.latency_ms,
      r.upstream_ms,
      r.request_bytes,
      r.response_bytes,
      ...r.hist,
    ];
    const [an, en] = [numbers(a), numbers(e)];
    assert.equal(an.length, en.length, where);
    en.forEach((x, j) => {
      assert.ok(
        close(an[j] ?? NaN, x),
        `${where}: sum ${String(j)} is ${String(an[j])}, expected ${String(x)}`,
      );
    });
  }
}

/** A small deterministic generator (mulberry32), so a failure can be run again. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const T0 = Date.UTC(2026, 10, 29, 10, 59, 0);
const REASONS: (RefusalReason | '')[] = ['', '', '', 'auth', 'rate_limit', 'quota'];

/** A batch as traffic makes one: a few orgs, APIs, keys (aliases changing), endpoints, across minutes and an hour. */
function batch(rand: () => number, size: number, keys: number): AnalyticsRecord[] {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
  const out: AnalyticsRecord[] = [];
  let time = T0 + Math.floor(rand() * 90_000);
  for (let i = 0; i < size; i++) {
    time += rand() * 300;
    const key = rand() < 0.1 ? '' : `k${String(Math.floor(rand() * keys))}`;
    const refusal = pick(REASONS);
    out.push({
      time,
      org_id: pick(['o1', 'o1', 'o2']),
      api_id: pick(['a1', 'a1', 'a2', 'a\n3']),
      api_version: '',
      key,
      alias: key === '' ? '' : pick(['', 'partner', 'partner', 'mobile']),
      method: pick(['GET', 'GET', 'POST']),
      path: pick(['/x', '/users/{id}', '/users/{id}/orders']),
      status: refusal === '' ? pick([200, 200, 201, 500, 0]) : refusal === 'rate_limit' ? 429 : 403,
      latency_ms: Math.round(rand() * 400_000) / 1000,
      upstream_latency_ms: Math.round(rand() * 300_000) / 1000,
      request_bytes: Math.floor(rand() * 2000),
      response_bytes: Math.floor(rand() * 9000),
      refusal,
    });
  }
  return out;
}

test('rollup: the rows of a batch are those of each record added to its rows in turn (200 random batches)', () => {
  const rand = random(34);
  for (let n = 0; n < 200; n++) {
    const size = n % 50 === 0 ? 2000 : 1 + Math.floor(rand() * 200);
    const records = batch(rand, size, n % 10 === 0 ? MAX_NAMES + 50 : 8);
    const weight = n % 3 === 0 ? 1 / 0.3 : 1;
    assertSameRows(rollUp(records, weight), referenceRollUp(records, weight), `batch ${String(n)}`);
  }
});

test('rollup: records taking turns among endpoints, keys beyond the cap and an alias changing mid-batch', () => {
  const rec = (i: number, over: Partial<AnalyticsRecord>): AnalyticsRecord => ({
    time: T0 + i,
    org_id: 'o1',
    api_id: 'a1',
    api_version: '',
    key: 'k',
    alias: 'first',
    method: 'GET',
    path: `/e${String(i % 4)}`,
    status: 200,
    latency_ms: 1.5,
    upstream_latency_ms: 1,
    request_bytes: 0,
    response_bytes: 2,
    refusal: '',
    ...over,
  });
  const records = [
    ...Array.from({ length: 40 }, (_, i) => rec(i, {})),
    rec(40, { alias: 'second' }),
    rec(41, { alias: '' }),
    rec(42, {}),
    ...Array.from({ length: MAX_NAMES + 3 }, (_, i) =>
      rec(50 + i, { key: `n${String(i)}`, alias: `al${String(i)}` }),
    ),
    rec(60_000, {}),
  ];
  const rows = rollUp(records, 1);
  assertSameRows(rows, referenceRollUp(records, 1), 'turns');
  const key = rows.find((r) => r.period === 'minute' && r.dim === 'key' && r.name === 'k' && r.at === T0);
  assert.equal(key?.label, 'first', 'the last alias of the key in the minute');
  assert.equal(key.requests, 43);
  const other = rows.find((r) => r.period === 'hour' && r.dim === 'key' && r.name === OTHER);
  assert.equal(other?.requests, 4, 'the keys beyond the cap, summed as one');
  assert.equal(other.label, `al${String(MAX_NAMES + 2)}`);
  assert.equal(rows.filter((r) => r.period === 'minute' && r.dim === 'endpoint' && r.at === T0).length, 4);
});
