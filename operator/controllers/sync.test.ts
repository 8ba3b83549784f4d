import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hashOf } from '../../lib/canonical-hash.ts';
import { pushDocument, type DocumentOps } from './sync.ts';

/** A peer holding at most one document, recording every call. */
function peer(held: { v: number } | undefined): {
  ops: Required<DocumentOps<{ v: number }>>;
  calls: string[];
} {
  let doc = held;
  const calls: string[] = [];
  return {
    calls,
    ops: {
      get: () => {
        calls.push('get');
        return Promise.resolve(doc);
      },
      create: (d) => {
        calls.push('create');
        doc = d;
        return Promise.resolve();
      },
      update: (d) => {
        calls.push('update');
        doc = d;
        return Promise.resolve();
      },
      updateIfExists: (d) => {
        calls.push('updateIfExists');
        if (doc === undefined) return Promise.resolve(false);
        doc = d;
        return Promise.resolve(true);
      },
    },
  };
}

const pushedBefore = { latestCRDSpecHash: hashOf({ v: 1 }), latestSvcSpecHash: hashOf({ v: 1 }) };

test('a changed translation is written without reading the peer first, then read back', async () => {
  const { ops, calls } = peer({ v: 1 });
  const out = await pushDocument(ops, { v: 2 }, pushedBefore, () => {
    calls.push('reload');
    return Promise.resolve();
  });
  assert.equal(out.action, 'Updated');
  assert.deepEqual(calls, ['updateIfExists', 'reload', 'get']);
  assert.equal(out.hashes.latestSvcSpecHash, hashOf({ v: 2 }));
});

test('a changed translation the peer no longer has is created', async () => {
  const { ops, calls } = peer(undefined);
  const out = await pushDocument(ops, { v: 2 }, pushedBefore);
  assert.equal(out.action, 'Created');
  assert.deepEqual(calls, ['updateIfExists', 'create', 'get']);
});

test('never pushed, or the same translation: the peer is read first (create, or drift put back)', async () => {
  const first = peer(undefined);
  assert.equal((await pushDocument(first.ops, { v: 1 }, {})).action, 'Created');
  assert.deepEqual(first.calls, ['get', 'create', 'get']);
  const same = peer({ v: 1 });
  assert.equal((await pushDocument(same.ops, { v: 1 }, pushedBefore)).action, undefined);
  assert.deepEqual(same.calls, ['get']);
  const drifted = peer({ v: 9 });
  assert.equal((await pushDocument(drifted.ops, { v: 1 }, pushedBefore)).action, 'Updated');
  assert.deepEqual(drifted.calls, ['get', 'update', 'get']);
});
