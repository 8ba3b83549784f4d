import { test } from 'node:test';
import assert from 'node:assert/strict';
import { diff, equal, pointerToken } from './json-patch.ts';
import type { PatchOp } from './json-patch.ts';
import { applyPatch as apply } from './testing.ts';

const cases: { name: string; from: unknown; to: unknown; ops: PatchOp[] }[] = [
  { name: 'equal', from: { a: 1, b: [1, 2] }, to: { a: 1, b: [1, 2] }, ops: [] },
  {
    name: 'added key',
    from: { a: {} },
    to: { a: { b: 'x' } },
    ops: [{ op: 'add', path: '/a/b', value: 'x' }],
  },
  { name: 'removed key', from: { a: 1, b: 2 }, to: { a: 1 }, ops: [{ op: 'remove', path: '/b' }] },
  { name: 'replaced value', from: { a: 1 }, to: { a: 2 }, ops: [{ op: 'replace', path: '/a', value: 2 }] },
  {
    name: 'array elements of equal length are patched in place',
    from: { l: [{ n: 'a' }, { n: 'b' }] },
    to: {
      l: [
        { n: 'a', k: 'X' },
        { n: 'b', k: 'X' },
      ],
    },
    ops: [
      { op: 'add', path: '/l/0/k', value: 'X' },
      { op: 'add', path: '/l/1/k', value: 'X' },
    ],
  },
  {
    name: 'an array of another length is replaced',
    from: { l: [1] },
    to: { l: [1, 2] },
    ops: [{ op: 'replace', path: '/l', value: [1, 2] }],
  },
  {
    name: 'keys with / and ~ are escaped',
    from: { 'a/b': { '~c': 1 } },
    to: { 'a/b': { '~c': 2 } },
    ops: [{ op: 'replace', path: '/a~1b/~0c', value: 2 }],
  },
  {
    name: 'type change',
    from: { a: [1] },
    to: { a: { x: 1 } },
    ops: [{ op: 'replace', path: '/a', value: { x: 1 } }],
  },
];

for (const c of cases) {
  test(`diff: ${c.name}`, () => {
    const ops = diff(c.from, c.to);
    assert.deepEqual(ops, c.ops);
    assert.deepEqual(apply(c.from, ops), c.to);
  });
}

test('equal ignores undefined members and key order', () => {
  assert.equal(equal({ a: 1, b: undefined }, { a: 1 }), true);
  assert.equal(equal({ a: 1, b: 2 }, { b: 2, a: 1 }), true);
  assert.equal(equal([1, 2], [2, 1]), false);
  assert.equal(equal({ a: [1] }, { a: { 0: 1 } }), false);
});

test('pointerToken escapes ~ before /', () => {
  assert.equal(pointerToken('~/'), '~0~1');
});
