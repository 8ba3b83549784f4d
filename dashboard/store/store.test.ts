/** One suite, both storages: what a Store promises, on SQLite and on a real PostgreSQL. */
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { storeFixtures } from '../testing/stores.ts';
import { MIGRATIONS } from './migrations.ts';
import { LookupTakenError, pageSlice, type Store } from './store.ts';

for (const fx of storeFixtures()) {
  describe(`store on ${fx.name}`, () => {
    after(() => fx.stop());

    const fresh = async (): Promise<{ store: Store; where: string }> => {
      const where = await fx.fresh();
      let t = 1000;
      return { store: await fx.open(where, { now: () => t++ }), where };
    };

    test('migrations: applied at open, once, and kept across restarts', async () => {
      const { store, where } = await fresh();
      const latest = Math.max(...MIGRATIONS.map((m) => m.version));
      assert.equal(await store.schemaVersion(), latest);
      await store.write('o1', (tx) => tx.putOrg('o1', { owner_name: 'One' }));
      await store.close();
      const again = await fx.open(where);
      assert.equal(await again.schemaVersion(), latest);
      assert.deepEqual((await again.getOrg('o1'))?.body, { owner_name: 'One' });
      assert.deepEqual(await again.health(), { ok: true });
      await again.close();
    });

    test('documents: put, get, list in creation order, replace, delete; scoped by organisation', async () => {
      const { store } = await fresh();
      await store.write('a', async (tx) => {
        await tx.putOrg('a', {});
        await tx.put('a', 'apis', 'x', { name: 'x1' });
        await tx.put('a', 'apis', 'y', { name: 'y1' });
        await tx.put('a', 'policies', 'x', { name: 'px' });
      });
      await store.write('b', async (tx) => {
        await tx.putOrg('b', {});
        await tx.put('b', 'apis', 'x', { name: 'bx' });
      });
      assert.deepEqual((await store.get('a', 'apis', 'x'))?.body, { name: 'x1' });
      assert.deepEqual((await store.get('b', 'apis', 'x'))?.body, { name: 'bx' });
      assert.equal(await store.get('b', 'apis', 'y'), undefined);
      const listed = await store.list('a', 'apis');
      assert.deepEqual(
        listed.items.map((d) => d.id),
        ['x', 'y'],
      );
      assert.equal(listed.total, 2);
      await store.write('a', (tx) => tx.put('a', 'apis', 'x', { name: 'x2' }));
      const x = await store.get('a', 'apis', 'x');
      assert.ok(x !== undefined);
      assert.deepEqual(x.body, { name: 'x2' });
      assert.ok(x.updated > x.created, 'a replace keeps created and moves updated');
      assert.equal(await store.write('b', (tx) => tx.delete('b', 'apis', 'y')), false);
      assert.equal(await store.write('a', (tx) => tx.delete('a', 'apis', 'y')), true);
      assert.deepEqual(
        (await store.list('a', 'apis')).items.map((d) => d.id),
        ['x'],
      );
      await store.close();
    });

    test('pages: slices and totals', async () => {
      const { store } = await fresh();
      await store.write('p', async (tx) => {
        for (let i = 0; i < 7; i++) await tx.put('p', 'keys', `k${i}`, { i });
      });
      const page = async (n: number): Promise<string[]> =>
        (await store.list('p', 'keys', pageSlice(n, 3))).items.map((d) => d.id);
      assert.deepEqual(await page(1), ['k0', 'k1', 'k2']);
      assert.deepEqual(await page(3), ['k6']);
      assert.deepEqual(await page(4), []);
      assert.equal((await store.list('p', 'keys', pageSlice(2, 3))).total, 7);
      await store.close();
    });

    test('transactions: a write that fails midway leaves nothing behind', async () => {
      const { store } = await fresh();
      await store.write('t', (tx) => tx.put('t', 'apis', 'kept', { v: 1 }));
      await assert.rejects(
        store.write('t', async (tx) => {
          await tx.put('t', 'apis', 'kept', { v: 2 });
          await tx.put('t', 'apis', 'new', { v: 1 });
          await tx.audit({
            org_id: 't',
            at: 1,
            actor: 'admin',
            action: 'create',
            kind: 'apis',
            object_id: 'new',
            before_hash: null,
            after_hash: 'h',
          });
          throw new Error('crash mid-write');
        }),
        /crash mid-write/,
      );
      assert.deepEqual((await store.get('t', 'apis', 'kept'))?.body, { v: 1 });
      assert.equal(await store.get('t', 'apis', 'new'), undefined);
      assert.equal((await store.listAudit('t')).total, 0);
      await store.close();
    });

    test('transactions: concurrent writes of one organisation are serialized', async () => {
      const { store } = await fresh();
      await store.write('c', (tx) => tx.put('c', 'apis', 'n', { n: 0 }));
      const bump = (): Promise<void> =>
        store.write('c', async (tx) => {
          const n = Number((await tx.get('c', 'apis', 'n'))?.body.n);
          await new Promise((r) => setTimeout(r, 2));
          await tx.put('c', 'apis', 'n', { n: n + 1 });
        });
      await Promise.all(Array.from({ length: 10 }, bump));
      assert.deepEqual((await store.get('c', 'apis', 'n'))?.body, { n: 10 });
      await store.close();
    });

    test('lookup: unique per kind across organisations, found from any organisation', async () => {
      const { store } = await fresh();
      await store.write('a', (tx) => tx.put('a', 'users', 'u1', { email: 'a@x' }, 'hash-1'));
      const found = await store.findByLookup('users', 'hash-1');
      assert.ok(found !== undefined);
      assert.equal(found.org, 'a');
      assert.equal(found.doc.id, 'u1');
      assert.equal(await store.findByLookup('users', 'hash-2'), undefined);
      await assert.rejects(
        store.write('b', (tx) => tx.put('b', 'users', 'u2', {}, 'hash-1')),
        (err) => err instanceof LookupTakenError,
      );
      // The same document may keep its lookup value when it is replaced.
      await store.write('a', (tx) => tx.put('a', 'users', 'u1', { email: 'a@y' }, 'hash-1'));
      assert.deepEqual((await store.findByLookup('users', 'hash-1'))?.doc.body, { email: 'a@y' });
      // Replaced without a lookup value, it keeps the one it had; with a new one, the old is free.
      await store.write('a', (tx) => tx.put('a', 'users', 'u1', { email: 'a@z' }));
      assert.deepEqual((await store.findByLookup('users', 'hash-1'))?.doc.body, { email: 'a@z' });
      await store.write('a', (tx) => tx.put('a', 'users', 'u1', { email: 'a@z' }, 'hash-3'));
      assert.equal(await store.findByLookup('users', 'hash-1'), undefined);
      assert.equal((await store.findByLookup('users', 'hash-3'))?.doc.id, 'u1');
      await store.close();
    });

    test('audit: entries per organisation in order; deleting an organisation removes all it owns', async () => {
      const { store } = await fresh();
      for (const org of ['a', 'b']) {
        await store.write(org, async (tx) => {
          await tx.putOrg(org, { owner_name: org });
          await tx.put(org, 'apis', 'x', {});
          await tx.audit({
            org_id: org,
            at: 5,
            actor: 'user:u',
            action: 'create',
            kind: 'apis',
            object_id: 'x',
            before_hash: null,
            after_hash: 'h1',
          });
          await tx.audit({
            org_id: org,
            at: 6,
            actor: 'user:u',
            action: 'delete',
            kind: 'apis',
            object_id: 'x',
            before_hash: 'h1',
            after_hash: null,
          });
        });
      }
      const log = await store.listAudit('a');
      assert.equal(log.total, 2);
      assert.deepEqual(
        log.items.map((e) => [e.action, e.before_hash, e.after_hash, e.actor, e.at]),
        [
          ['create', null, 'h1', 'user:u', 5],
          ['delete', 'h1', null, 'user:u', 6],
        ],
      );
      assert.equal(await store.write('a', (tx) => tx.deleteOrg('a')), true);
      assert.equal(await store.getOrg('a'), undefined);
      assert.equal(await store.get('a', 'apis', 'x'), undefined);
      assert.equal((await store.listAudit('a')).total, 0);
      assert.equal((await store.listAudit('b')).total, 2, 'other organisations keep theirs');
      assert.deepEqual(
        (await store.listOrgs()).items.map((o) => o.id),
        ['b'],
      );
      await store.close();
    });
  });
}
