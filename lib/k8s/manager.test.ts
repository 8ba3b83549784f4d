import { test } from 'node:test';
import assert from 'node:assert/strict';
import { specChanged } from './manager.ts';

const obj = (meta: Record<string, unknown>) => ({ metadata: { name: 'a', namespace: 'n', ...meta } });

const cases: { name: string; old: Record<string, unknown>; now: Record<string, unknown>; want: boolean }[] = [
  {
    name: 'status or finalizer write (same generation)',
    old: { generation: 1 },
    now: { generation: 1, finalizers: ['f'] },
    want: false,
  },
  { name: 'spec change (new generation)', old: { generation: 1 }, now: { generation: 2 }, want: true },
  {
    name: 'deletion requested',
    old: { generation: 1 },
    now: { generation: 1, deletionTimestamp: '2026-01-01T00:00:00Z' },
    want: true,
  },
  {
    name: 'labels changed',
    old: { generation: 1, labels: { a: '1' } },
    now: { generation: 1, labels: { a: '2' } },
    want: true,
  },
  {
    name: 'annotations changed',
    old: { generation: 1 },
    now: { generation: 1, annotations: { x: 'y' } },
    want: true,
  },
  { name: 'a kind without generation (ConfigMap data)', old: {}, now: {}, want: true },
];

for (const c of cases) {
  test(`specChanged: ${c.name}`, () => {
    assert.equal(specChanged(obj(c.now), obj(c.old)), c.want);
  });
}
