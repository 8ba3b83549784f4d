/**
 * One suite, run against both stores: the files store on a temporary directory and the Redis
 * store on a redis-server started for the test.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '../../lib/log.ts';
import { startRedis, startRedisOn, type TestRedis } from '../testing/redis-server.ts';
import { freePort, waitFor } from '../../lib/testing/wait.ts';
import { FilesStore, fileNameOf } from './files.ts';
import { RedisStore } from './redis.ts';
import { isGroupMessage, type Collection, type GroupMessage, type PutMode, type Store } from './store.ts';

const log = silentLogger();

interface Backend {
  name: string;
  setup(): Promise<void>;
  /** A new store on the same backing (another process, or the same one after a restart). */
  open(): Promise<Store>;
  teardown(): Promise<void>;
}

let dir = '';
let redis: TestRedis | undefined;
let prefixN = 0;
let prefix = '';

const backends: Backend[] = [
  {
    name: 'files',
    setup: () => {
      dir = mkdtempSync(join(tmpdir(), 'svc-gw-store-'));
      return Promise.resolve();
    },
    open: () => FilesStore.open(dir, log),
    teardown: () => {
      rmSync(dir, { recursive: true, force: true });
      return Promise.resolve();
    },
  },
  {
    name: 'redis',
    setup: async () => {
      redis = await startRedis();
    },
    open: () => {
      assert.ok(redis);
      return Promise.resolve(new RedisStore(redis.url, { prefix, log }));
    },
    teardown: async () => {
      await redis?.stop();
    },
  },
];

type Step =
  | { op: 'put'; c?: Collection; id: string; value: unknown; mode?: PutMode; want: string }
  | { op: 'get'; c?: Collection; id: string; want: unknown }
  | { op: 'delete'; c?: Collection; id: string; want: boolean }
  | { op: 'list'; c?: Collection; want: { id: string; value: unknown }[] };

const scenarios: { name: string; steps: Step[] }[] = [
  {
    name: 'write, read, list and delete',
    steps: [
      { op: 'get', id: 'a', want: undefined },
      { op: 'put', id: 'a', value: { v: 1 }, want: 'added' },
      { op: 'put', id: 'a', value: { v: 2 }, want: 'modified' },
      { op: 'get', id: 'a', want: { v: 2 } },
      { op: 'put', id: 'b', value: [1, 'x'], want: 'added' },
      {
        op: 'list',
        want: [
          { id: 'a', value: { v: 2 } },
          { id: 'b', value: [1, 'x'] },
        ],
      },
      { op: 'delete', id: 'a', want: true },
      { op: 'delete', id: 'a', want: false },
      { op: 'list', want: [{ id: 'b', value: [1, 'x'] }] },
    ],
  },
  {
    name: 'create and update modes refuse without writing',
    steps: [
      { op: 'put', id: 'c', value: 1, mode: 'update', want: 'missing' },
      { op: 'get', id: 'c', want: undefined },
      { op: 'put', id: 'c', value: 1, mode: 'create', want: 'added' },
      { op: 'put', id: 'c', value: 2, mode: 'create', want: 'exists' },
      { op: 'get', id: 'c', want: 1 },
      { op: 'put', id: 'c', value: 3, mode: 'update', want: 'modified' },
      { op: 'get', id: 'c', want: 3 },
    ],
  },
  {
    name: 'collections are separate',
    steps: [
      { op: 'put', c: 'policies', id: 'same', value: 'policy', want: 'added' },
      { op: 'put', c: 'keys', id: 'same', value: 'key', want: 'added' },
      { op: 'get', c: 'policies', id: 'same', want: 'policy' },
      { op: 'list', c: 'keys', want: [{ id: 'same', value: 'key' }] },
    ],
  },
  {
    name: 'IDs with dots, tildes, percent signs and non-ASCII characters',
    steps: [
      { op: 'put', c: 'keys', id: '.', value: 1, want: 'added' },
      { op: 'put', c: 'keys', id: '..', value: 2, want: 'added' },
      { op: 'put', c: 'keys', id: '~a.b-c_d', value: 3, want: 'added' },
      { op: 'put', c: 'keys', id: '50%/x y', value: 4, want: 'added' },
      { op: 'put', c: 'keys', id: 'héllo', value: 5, want: 'added' },
      { op: 'get', c: 'keys', id: '..', want: 2 },
      { op: 'get', c: 'keys', id: '50%/x y', want: 4 },
      {
        op: 'list',
        c: 'keys',
        want: [
          { id: '.', value: 1 },
          { id: '..', value: 2 },
          { id: '50%/x y', value: 4 },
          { id: 'héllo', value: 5 },
          { id: 'same', value: 'key' },
          { id: '~a.b-c_d', value: 3 },
        ],
      },
    ],
  },
];

async function run(s: Store, step: Step): Promise<unknown> {
  const c = step.c ?? 'apis';
  switch (step.op) {
    case 'put':
      return s.put(c, step.id, step.value, step.mode);
    case 'get':
      return s.get(c, step.id);
    case 'delete':
      return s.delete(c, step.id);
    case 'list':
      // The text a value was parsed from, when given, is that value's text; then compared
      // without it (the backings differ in how they format it).
      return (await s.list(c)).map((e) => {
        if (!('text' in e)) return e;
        assert.deepEqual(JSON.parse(e.text ?? ''), e.value);
        return { id: e.id, value: e.value };
      });
  }
}

for (const b of backends) {
  describe(`store (${b.name})`, () => {
    let store: Store;
    before(async () => {
      prefix = `t${++prefixN}:`;
      await b.setup();
      store = await b.open();
    });
    after(async () => {
      await store.close();
      await b.teardown();
    });

    for (const sc of scenarios) {
      test(sc.name, async () => {
        for (const [i, step] of sc.steps.entries()) {
          assert.deepEqual(
            await run(store, step),
            step.want,
            `step ${i}: ${step.op} ${'id' in step ? step.id : ''}`,
          );
        }
      });
    }

    test('documents outlive the store: a new store on the same backing reads them', async () => {
      await store.put('apis', 'persisted', { name: 'p' });
      const again = await b.open();
      try {
        assert.deepEqual(await again.get('apis', 'persisted'), { name: 'p' });
      } finally {
        await again.close();
      }
    });

    test('list after list: a change by another store is seen, values are not shared between lists', async () => {
      for (const id of ['l1', 'l2', 'l3']) await store.put('policies', id, { id, n: 1 });
      const other = await b.open();
      try {
        const valueIn = (entries: Awaited<ReturnType<Store['list']>>, id: string): unknown => {
          const e = entries.find((x) => x.id === id);
          return e === undefined || 'problem' in e ? e : e.value;
        };
        const first = await store.list('policies');
        await other.put('policies', 'l2', { id: 'l2', n: 2 });
        const second = await store.list('policies');
        assert.deepEqual(valueIn(second, 'l2'), { id: 'l2', n: 2 });
        (valueIn(first, 'l1') as { n: number }).n = -1;
        (valueIn(second, 'l3') as { n: number }).n = -1;
        const third = await store.list('policies');
        assert.deepEqual(
          [valueIn(third, 'l1'), valueIn(third, 'l3')],
          [
            { id: 'l1', n: 1 },
            { id: 'l3', n: 1 },
          ],
        );
      } finally {
        await other.close();
      }
    });

    test('concurrent creates of one ID: exactly one wins', async () => {
      const outcomes = await Promise.all(
        Array.from({ length: 8 }, (_, i) => store.put('apis', 'race', { i }, 'create')),
      );
      assert.equal(outcomes.filter((o) => o === 'added').length, 1);
      assert.equal(outcomes.filter((o) => o === 'exists').length, 7);
    });

    test('a group message reaches every store on the same backing, the sender included', async () => {
      const other = await b.open();
      const got: GroupMessage[] = [];
      const mine: GroupMessage[] = [];
      const off = other.subscribe((m) => got.push(m));
      const offMine = store.subscribe((m) => mine.push(m));
      try {
        await other.subscribed();
        await store.subscribed();
        await store.publish({ type: 'reload', origin: 'p1' });
        await waitFor('the message on the other store', () => (got.length > 0 ? true : undefined));
        await waitFor('the message on the sender', () => (mine.length > 0 ? true : undefined));
        assert.deepEqual(got, [{ type: 'reload', origin: 'p1' }]);
        off();
        await store.publish({ type: 'reload', origin: 'p2' });
        await waitFor('the second message on the sender', () => (mine.length > 1 ? true : undefined));
        assert.equal(got.length, 1, 'an unsubscribed handler receives nothing');
      } finally {
        offMine();
        await other.close();
      }
    });

    test('health is ok', async () => {
      assert.deepEqual(await store.health(), { ok: true });
    });
  });
}

describe('store (files) on disk', () => {
  let d = '';
  let store: FilesStore;
  before(async () => {
    d = mkdtempSync(join(tmpdir(), 'svc-gw-files-'));
    store = await FilesStore.open(d, log);
  });
  after(async () => {
    await store.close();
    rmSync(d, { recursive: true, force: true });
  });

  test('one readable JSON file per document, no temporary file left', async () => {
    await store.put('apis', 'x', { name: 'x' });
    await store.put('apis', 'x', { name: 'y' });
    assert.deepEqual(readdirSync(join(d, 'apis')), ['x.json']);
  });

  test('an unreadable file is listed with its problem, temporary files are ignored', async () => {
    writeFileSync(join(d, 'apis', 'broken.json'), '{"name": ');
    writeFileSync(join(d, 'apis', '.tmp-1-abc'), '{"half');
    writeFileSync(join(d, 'apis', 'a b.json'), '{}');
    const entries = await store.list('apis');
    assert.deepEqual(
      entries.map((e) => ('problem' in e ? `${e.id}: problem` : e.id)),
      ['a b: problem', 'broken: problem', 'x'],
    );
    const broken = entries.find((e) => e.id === 'broken');
    assert.match(broken && 'problem' in broken ? broken.problem : '', /^apis\/broken\.json: .*JSON/);
  });

  test('list sees a file edited by hand, even at the same size, and one removed', async () => {
    await store.put('apis', 'edited', { name: 'aaaa' });
    const first = await store.list('apis');
    assert.deepEqual(
      first.find((e) => e.id === 'edited'),
      {
        id: 'edited',
        value: { name: 'aaaa' },
        text: readFileSync(join(d, 'apis', 'edited.json'), 'utf8'),
      },
    );
    // In place (same inode) and at the same size: only the modification time tells.
    const path = join(d, 'apis', 'edited.json');
    const size = statSync(path).size;
    writeFileSync(path, `${JSON.stringify({ name: 'bbbb' }, null, 2)}\n`);
    assert.equal(statSync(path).size, size);
    const second = await store.list('apis');
    assert.deepEqual(
      second.find((e) => e.id === 'edited'),
      { id: 'edited', value: { name: 'bbbb' }, text: readFileSync(path, 'utf8') },
      'same size, new content',
    );
    rmSync(join(d, 'apis', 'edited.json'));
    assert.equal(
      (await store.list('apis')).find((e) => e.id === 'edited'),
      undefined,
    );
  });

  test('a list sees what another process wrote since the last list, among many unchanged files', async () => {
    for (let i = 0; i < 300; i++) await store.put('policies', `p${String(i)}`, { n: i });
    const other = await FilesStore.open(d, log);
    try {
      assert.equal((await store.list('policies')).length, 300);
      // Another worker of the node (its own store on the same directory) replaces, adds, removes.
      await other.put('policies', 'p7', { n: 'seven' });
      await other.put('policies', 'new', { n: 'new' });
      await other.delete('policies', 'p8');
      // By hand, in place, at the same size.
      const path = join(d, 'policies', 'p9.json');
      writeFileSync(path, readFileSync(path, 'utf8').replace('9', '6'));
      const listed = await store.list('policies');
      const value = (id: string): unknown => {
        const e = listed.find((x) => x.id === id);
        return e === undefined || 'problem' in e ? e : e.value;
      };
      assert.equal(listed.length, 300);
      assert.deepEqual(
        [value('p7'), value('new'), value('p8'), value('p9'), value('p10')],
        [{ n: 'seven' }, { n: 'new' }, undefined, { n: 6 }, { n: 10 }],
      );
      // Each list hands out its own values: a caller changing one changes no other list's.
      (value('p10') as { n: number }).n = -1;
      const again = (await store.list('policies')).find((x) => x.id === 'p10');
      assert.deepEqual(again !== undefined && 'value' in again ? again.value : again, { n: 10 });
    } finally {
      await other.close();
    }
  });

  test('a list without readdir (the watcher knows the changes) still sees a misnamed file, added and removed files', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-gw-files-'));
    const own = await FilesStore.open(dir, log);
    try {
      await own.put('apis', 'a', { name: 'a' });
      writeFileSync(join(dir, 'apis', 'a b.json'), '{}');
      const ids = async (): Promise<string[]> =>
        (await own.list('apis')).map((e) => ('problem' in e ? `${e.id}: problem` : e.id));
      assert.deepEqual(await ids(), ['a', 'a b: problem']);
      // Nothing changed, then one file added by hand: the problem is reported at every list.
      assert.deepEqual(await ids(), ['a', 'a b: problem']);
      writeFileSync(join(dir, 'apis', 'c.json'), '{"name":"c"}');
      assert.deepEqual(await ids(), ['a', 'a b: problem', 'c']);
      rmSync(join(dir, 'apis', 'a b.json'));
      rmSync(join(dir, 'apis', 'a.json'));
      assert.deepEqual(await ids(), ['c']);
      assert.deepEqual(await ids(), ['c']);
    } finally {
      await own.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('file names: reserved characters encoded, over-long IDs refused', () => {
    assert.equal(fileNameOf('.hidden'), '%2Ehidden.json');
    assert.equal(fileNameOf('a/b'), 'a%2Fb.json');
    assert.throws(() => fileNameOf('x'.repeat(241)), /ID too long/);
  });
});

describe('store (redis) unreachable', () => {
  test('health says why, operations fail as transient errors', async () => {
    const r = await startRedis();
    const store = new RedisStore(r.url, { prefix: 'u:', log });
    try {
      assert.deepEqual(await store.health(), { ok: true });
      await r.stop();
      const h = await store.health();
      assert.equal(h.ok, false);
      await assert.rejects(store.get('apis', 'a'), { code: 'GW_ERR_STORE_UNAVAILABLE', status: 503 });
    } finally {
      await store.close();
    }
  });
});

describe('store (redis) that starts after the gateway', () => {
  test('group messages arrive once Redis is up', async () => {
    const port = await freePort();
    const late = new RedisStore(`redis://127.0.0.1:${port}`, { prefix: 'late:', log });
    const got: GroupMessage[] = [];
    late.subscribe((m) => got.push(m));
    await late.subscribed(); // settles on the first connection error: start-up is not held
    const r = await startRedisOn(port);
    const sender = new RedisStore(r.url, { prefix: 'late:', log });
    try {
      await waitFor(
        'a message on the late subscriber',
        async () => {
          await sender.publish({ type: 'reload', origin: 'x' });
          return got.length > 0 ? true : undefined;
        },
        15_000,
        200,
      );
    } finally {
      await late.close();
      await sender.close();
      await r.stop();
    }
  });
});

describe('store (files): the read cache', () => {
  test('a warm get does not read the disk; forget (a changed message) reads it again', async () => {
    const cacheDir = mkdtempSync(join(tmpdir(), 'svc-gw-cache-'));
    const store = await FilesStore.open(cacheDir, log);
    try {
      await store.put('keys', 'k', { v: 1 });
      assert.deepEqual(await store.get('keys', 'k'), { v: 1 });
      assert.equal(await store.get('keys', 'absent'), undefined);
      // Another process of the node writes behind this store's back.
      writeFileSync(join(cacheDir, 'keys', fileNameOf('k')), '{"v":2}');
      writeFileSync(join(cacheDir, 'keys', fileNameOf('absent')), '{"v":3}');
      assert.deepEqual(await store.get('keys', 'k'), { v: 1 }, 'served from memory');
      assert.equal(await store.get('keys', 'absent'), undefined, 'a miss is remembered too');
      store.forget('keys', 'k');
      store.forget('keys', 'absent');
      assert.deepEqual(await store.get('keys', 'k'), { v: 2 });
      assert.deepEqual(await store.get('keys', 'absent'), { v: 3 });
      const copy = (await store.get('keys', 'k')) as { v: number };
      copy.v = 99;
      assert.deepEqual(await store.get('keys', 'k'), { v: 2 }, 'callers get their own copy');
    } finally {
      await store.close();
      rmSync(cacheDir, { recursive: true, force: true });
    }
  });

  test('group messages: a changed message carries its collection and ID', () => {
    assert.equal(isGroupMessage({ type: 'changed', origin: 'o', collection: 'keys', id: 'x' }), true);
    assert.equal(isGroupMessage({ type: 'changed', origin: 'o', collection: 'nope', id: 'x' }), false);
    assert.equal(isGroupMessage({ type: 'changed', origin: 'o', collection: 'keys' }), false);
  });
});
