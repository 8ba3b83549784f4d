import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hashOf } from '../ids.ts';
import { compare, diffText, fieldDiff } from './diff.ts';

test('fieldDiff: nested paths, absent fields, key order ignored', () => {
  assert.deepEqual(
    fieldDiff({ a: 1, b: { c: [1, 2], d: 'x' }, e: true }, { b: { d: 'y', c: [1, 2] }, a: 1, f: 0 }),
    ['b.d: "x" -> "y"', 'e: true -> (absent)', 'f: (absent) -> 0'],
  );
  assert.deepEqual(fieldDiff({ a: { b: 1 } }, { a: { b: 1 } }), []);
});

test('compare: in sync, drifted, missing, not pushed; printed one a line with the fields', () => {
  const copy = { rate: 5 };
  const entries = [
    compare('SecurityPolicy/a', 'p1', hashOf({ rate: 1 }), { rate: 1 }, { rate: 1 }),
    compare('SecurityPolicy/b', 'p2', hashOf({ rate: 1 }), { rate: 1 }, copy),
    compare('ApiDefinition/c', 'a1', 'h', {}, undefined),
    compare('ApiDefinition/d', '', undefined, {}, undefined),
  ];
  assert.deepEqual(
    entries.map((e) => e.state),
    ['in sync', 'drifted', 'missing', 'not pushed'],
  );
  assert.equal(
    diffText(entries),
    [
      'SecurityPolicy/a (p1): in sync',
      'SecurityPolicy/b (p2): drifted',
      '  rate: 1 -> 5',
      'ApiDefinition/c (a1): missing',
      'ApiDefinition/d (no ID yet): not pushed',
      '',
    ].join('\n'),
  );
});
