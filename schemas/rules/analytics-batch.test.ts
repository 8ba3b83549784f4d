/**
 * The columns format of analytics batches (`POST /system/analytics`): records written by the
 * writer, sent as JSON, read back as the same records; each string written once; a batch that is
 * not one named by its problem; a record whose fields do not read, skipped or emptied by the rules
 * of the records format.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { recordedBody } from './analytics-detail.ts';
import {
  addRecord,
  AnalyticsColumnsWriter,
  readAnalyticsColumnRecords,
  readAnalyticsColumns,
  recordsOfColumns,
  type AnalyticsColumns,
} from './analytics-batch.ts';
import { readAnalyticsRecord, type AnalyticsRecord } from './analytics.ts';

const T0 = 1_700_000_000_000;

const rec = (over: Partial<AnalyticsRecord>): AnalyticsRecord => ({
  time: T0,
  org_id: 'o1',
  api_id: 'a1',
  api_version: '',
  key: 'ab'.repeat(32),
  alias: 'partner',
  method: 'GET',
  path: '/a1/users/{id}',
  status: 200,
  latency_ms: 1.234,
  upstream_latency_ms: 0.987,
  request_bytes: 0,
  response_bytes: 2,
  refusal: '',
  ...over,
});

const sent = (records: AnalyticsRecord[], rate = 1): Record<string, unknown> => {
  const w = new AnalyticsColumnsWriter();
  for (const r of records) addRecord(w, r);
  return JSON.parse(JSON.stringify(w.batch(rate))) as Record<string, unknown>;
};

const read = (body: Record<string, unknown>): (AnalyticsRecord | undefined)[] => {
  const r = readAnalyticsColumns(body, 5000);
  if ('problem' in r) throw new Error(r.problem);
  return r.records.map(readAnalyticsRecord);
};

test('analytics columns: records read back as written, each string once, latencies to the microsecond', () => {
  const records = [
    rec({}),
    rec({ time: T0 + 7, status: 429, refusal: 'rate_limit', latency_ms: 0.0005, upstream_latency_ms: 0 }),
    rec({ time: T0 - 3, api_id: 'a2', path: '/a2/', method: 'POST', request_bytes: 12, key: '', alias: '' }),
    rec({
      time: T0 + 1000,
      api_version: 'v2',
      detail: {
        query: '?q=1',
        request: recordedBody(Buffer.from('{"a":1}'), 7, false),
        response: recordedBody(Buffer.from([0xff, 0xfe]), 2, false),
      },
    }),
  ];
  const body = sent(records, 0.5);
  assert.equal(body.sample_rate, 0.5);
  assert.equal(body.count, 4);
  assert.deepEqual(
    [...(body.strings as string[])].sort(),
    [
      '',
      '/a1/users/{id}',
      '/a2/',
      'GET',
      'POST',
      'a1',
      'a2',
      'ab'.repeat(32),
      'o1',
      'partner',
      'rate_limit',
      'v2',
    ].sort(),
  );
  assert.deepEqual(read(body), [records[0], { ...records[1], latency_ms: 0.001 }, records[2], records[3]]);
  // A thousand records of one API and key: about 40 bytes each, against some 300 as records.
  const many = Array.from({ length: 1000 }, (_, i) => rec({ time: T0 + i, latency_ms: 1 + i / 7 }));
  const columns = JSON.stringify(sent(many)).length;
  const plain = JSON.stringify({ sample_rate: 1, records: many }).length;
  assert.ok(columns * 5 < plain, `${String(columns)} bytes as columns, ${String(plain)} as records`);
});

test('analytics columns: a batch that is not one is named by its problem', () => {
  const good = sent([rec({}), rec({ time: T0 + 1 })]);
  const problems: [string, Record<string, unknown>, RegExp][] = [
    ['no count', { ...good, count: undefined }, /^count: /],
    ['a count over the most', { ...good, count: 6000 }, /^count: at most 5000/],
    ['a count the columns do not have', { ...good, count: 3 }, /^time: must be an array of 3 entries/],
    ['a column missing', { ...good, status: undefined }, /^status: must be an array of 2 entries/],
    ['strings not an array', { ...good, strings: 'o1' }, /^strings: /],
  ];
  for (const [name, body, want] of problems) {
    const r = readAnalyticsColumns(body, 5000);
    assert.ok('problem' in r, name);
    assert.match(r.problem, want, name);
    assert.deepEqual(
      readAnalyticsColumnRecords(body, 5000),
      r,
      `${name}: the same problem for the dashboard's reader`,
    );
  }
});

test('analytics columns: fields that do not read are skipped or emptied as in the records format', () => {
  const body = sent([rec({}), rec({ time: T0 + 1 }), rec({ time: T0 + 2 })]);
  const strings = body.strings as string[];
  body.org_id = [0, 99, 0].map((v, i) => (i === 1 ? v : (body.org_id as number[])[i]));
  body.alias = [strings.length, -1, 0.5];
  body.status = [200, 200, 'x'];
  const [first, second, third] = read(body);
  assert.equal(first?.alias, '', 'an index out of strings reads as empty');
  assert.equal(second, undefined, 'no organisation: skipped');
  assert.equal(third, undefined, 'no status: skipped');
  assert.deepEqual(recordsOfColumns(body as unknown as AnalyticsColumns), [{ ...rec({}), alias: '' }]);
});

/** What the dashboard's reader gives, and what the plain reader then the records format's rules give. */
function bothReads(body: Record<string, unknown>): [unknown, unknown] {
  const plain = readAnalyticsColumns(body, 5000);
  if ('problem' in plain) throw new Error(plain.problem);
  const read = plain.records.map(readAnalyticsRecord);
  const records = read.filter((r) => r !== undefined);
  return [
    readAnalyticsColumnRecords(body, 5000),
    { sample_rate: plain.sample_rate, records, skipped: read.length - records.length },
  ];
}

test("analytics columns, the dashboard's reader: the records of the plain reader and readAnalyticsRecord, sound or not", () => {
  const detail = {
    query: '?q=1',
    request: recordedBody(Buffer.from('{"a":1}'), 7, false),
    response: recordedBody(Buffer.from([0xff, 0xfe]), 2, false),
  };
  const records = [
    rec({}),
    rec({ time: T0 + 7, status: 429, refusal: 'rate_limit', latency_ms: 0.0005 }),
    rec({ time: T0 - 3, api_id: 'a2', path: '/a2/', method: 'post', key: '', alias: '' }),
    rec({ time: T0 + 9, api_version: 'v2', detail }),
    rec({ time: T0 + 11 }),
    rec({ time: T0 + 12, key: 'k2', alias: 'other' }),
  ];
  const [fast, plain] = bothReads(sent(records, 0.25));
  assert.deepEqual(fast, plain, 'a sound batch');
  // Every kind of field that does not read: indexes out of strings, negative, fractional or not
  // numbers; strings too long or not strings; numbers negative, missing or not numbers; details
  // of records that are not, or not objects; a time base missing.
  const body = sent(records);
  const strings = body.strings as unknown[];
  strings.push('x'.repeat(300), 42, 'TOOLONGMETHOD-0123456789', 'unknown-reason', null);
  const n = strings.length;
  body.org_id = [0, n, -1, 0.5, 'o1', 0].map((v, i) =>
    i === 0 || i === 5 ? (body.org_id as number[])[i] : v,
  );
  body.api_id = (body.api_id as number[]).map((v, i) => (i === 4 ? n - 5 : v));
  body.key = (body.key as number[]).map((v, i) => (i === 0 ? n - 4 : i === 5 ? n - 1 : v));
  body.alias = (body.alias as number[]).map((v, i) => (i === 0 ? n - 5 : v));
  body.method = (body.method as number[]).map((v, i) => (i === 0 ? n - 3 : i === 5 ? null : v));
  body.path = (body.path as number[]).map((v, i) => (i === 0 ? n - 5 : v));
  body.refusal = (body.refusal as number[]).map((v, i) => (i === 0 ? n - 2 : v));
  body.latency_us = [-5, 'x', 1.5, null, 1e300, 7];
  body.request_bytes = [-1, 2, 'y', 0, 3, Infinity];
  body.status = [200, 200, 200, 200, -1, 200];
  body.details = [[0, detail], [5, 'not an object'], [99, detail], [-1, detail], [2.5, detail], 'junk', [0]];
  const [fastBad, plainBad] = bothReads(body);
  assert.deepEqual(fastBad, plainBad, 'a batch of fields that do not read');
  assert.equal((fastBad as { skipped: number }).skipped, 4);
  const noBase = sent(records);
  noBase.time_base = 'x';
  assert.deepEqual(...bothReads(noBase), 'no time base: every record skipped');
});
