import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger } from '../lib/log.ts';
import { validateApiDefinition } from './api-definition.validate.ts';
import type { ApiKind, Lookups } from './lookups.ts';
import { memoryLookups } from './memory-lookups.ts';
import { RouteClaimCache, RouteClaimIndex } from './route-claims.ts';
import { apiDefinitionClaim, claimOf, findConflict } from './routes.ts';
import type { RouteClaim } from './routes.ts';
import { apiDefinition, configMap, oasApi, oasDocument } from './testing.ts';

type Obj = Record<string, unknown>;

const claim = (name: string, over: Partial<RouteClaim> = {}): RouteClaim => ({
  kind: 'ApiDefinition',
  namespace: 'default',
  name,
  context: '',
  domain: '',
  listenPath: '/pets/',
  ...over,
});

describe('RouteClaimIndex', () => {
  const cases: { name: string; held: RouteClaim; asked: RouteClaim; conflict: boolean }[] = [
    { name: 'the same route', held: claim('a'), asked: claim('b'), conflict: true },
    {
      name: 'the same route as the router matches it',
      held: claim('a', { listenPath: '/Pets', domain: 'API.example.com.' }),
      asked: claim('b', { listenPath: '/pets/', domain: 'api.example.com:8080' }),
      conflict: true,
    },
    {
      name: 'another listen path',
      held: claim('a'),
      asked: claim('b', { listenPath: '/cats/' }),
      conflict: false,
    },
    {
      name: 'another domain',
      held: claim('a'),
      asked: claim('b', { domain: 'x.example.com' }),
      conflict: false,
    },
    { name: 'another gateway', held: claim('a'), asked: claim('b', { context: 'ns/ctx' }), conflict: false },
    { name: 'another port', held: claim('a'), asked: claim('b', { port: 8443 }), conflict: false },
    { name: 'an exact path', held: claim('a'), asked: claim('b', { exact: true }), conflict: false },
    { name: 'the API itself', held: claim('a'), asked: claim('a'), conflict: false },
    {
      name: 'the same name of another kind',
      held: claim('a'),
      asked: claim('a', { kind: 'SvcOasApiDefinition' }),
      conflict: true,
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const index = new RouteClaimIndex();
      index.set('ApiDefinition/default/a', [c.held]);
      assert.deepEqual(index.candidates(c.asked), c.conflict ? [c.held] : []);
    });
  }

  test('set replaces, add keeps, delete forgets', () => {
    const index = new RouteClaimIndex();
    index.set('x', [claim('a')]);
    index.set('x', [claim('a', { listenPath: '/cats/' })]);
    assert.deepEqual(index.candidates(claim('b')), []);
    index.add('x', claim('a'));
    assert.equal(index.claimsOf('x').length, 2);
    assert.equal(index.candidates(claim('b')).length, 1);
    index.add('x', claim('a'));
    assert.equal(index.claimsOf('x').length, 2, 'a claim of the same key is held once');
    index.delete('x');
    assert.deepEqual(index.candidates(claim('b', { listenPath: '/cats/' })), []);
    assert.equal(index.size, 0);
  });
});

/** A cluster whose objects the test changes, behind lookups that count their LISTs and GETs. */
function cluster(objects: Obj[]): { objects: Obj[]; lookups: Lookups; calls: { list: number; get: number } } {
  const calls = { list: 0, get: 0 };
  const state = { objects };
  const lookups: Lookups = {
    ...memoryLookups([]),
    configMap: (ns, name) => memoryLookups(state.objects).configMap(ns, name),
    get: (kind, ns, name) => {
      calls.get++;
      return memoryLookups(state.objects).get(kind, ns, name);
    },
    list: (kind) => {
      calls.list++;
      return memoryLookups(state.objects).list(kind);
    },
  };
  return { objects: state.objects, lookups, calls };
}

function cacheOver(lookups: Lookups, recheckMs = 0): RouteClaimCache {
  return new RouteClaimCache({
    claimOf: (kind, obj) => claimOf(kind, obj, lookups),
    fresh: async (kind, namespace, name) => {
      const obj = await lookups.get(kind, namespace, name);
      return obj === undefined ? undefined : claimOf(kind, obj, lookups);
    },
    log: silentLogger(),
    recheckMs,
  });
}

const kindOf = (o: Obj): ApiKind => o.kind as ApiKind;

async function until(what: string, ok: () => boolean): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!ok()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('RouteClaimCache', () => {
  test('a conflict is confirmed by a fresh read before it is reported', async () => {
    const { lookups, calls } = cluster([apiDefinition('pets')]);
    const cache = cacheOver(lookups);
    cache.observe('ApiDefinition', 'add', apiDefinition('pets'));
    await cache.markSynced();
    const other = await cache.conflict(claim('new-pets'));
    assert.equal(other?.name, 'pets');
    assert.equal(calls.get, 1);
    assert.equal(await cache.conflict(claim('new-cats', { listenPath: '/cats/' })), undefined);
    assert.equal(calls.get, 1, 'no candidate, no read');
    assert.equal(calls.list, 0);
  });

  test('a stale entry of a deleted API is dropped by the fresh read: admitted', async () => {
    const { lookups, objects } = cluster([apiDefinition('pets')]);
    const cache = cacheOver(lookups);
    cache.observe('ApiDefinition', 'add', apiDefinition('pets'));
    await cache.markSynced();
    objects.length = 0; // deleted; the watch event has not come yet
    assert.equal(await cache.conflict(claim('new-pets')), undefined);
    assert.deepEqual(cache.index.candidates(claim('new-pets')), []);
  });

  test('a stale entry of an API that moved is corrected by the fresh read: admitted', async () => {
    const { lookups, objects } = cluster([apiDefinition('pets')]);
    const cache = cacheOver(lookups);
    cache.observe('ApiDefinition', 'add', apiDefinition('pets'));
    await cache.markSynced();
    objects[0] = apiDefinition('pets', { proxy: { listen_path: '/v2/pets/', target_url: 'http://u' } });
    assert.equal(await cache.conflict(claim('new-pets')), undefined);
    assert.equal(cache.index.candidates(claim('x', { listenPath: '/v2/pets/' }))[0]?.name, 'pets');
  });

  test('a later watch event wins over an earlier one', async () => {
    const { lookups } = cluster([]);
    const cache = cacheOver(lookups);
    const moved = apiDefinition('pets', { proxy: { listen_path: '/v2/', target_url: 'http://u' } });
    cache.observe('ApiDefinition', 'add', apiDefinition('pets'));
    cache.observe('ApiDefinition', 'update', moved, apiDefinition('pets'));
    await cache.markSynced();
    assert.deepEqual(cache.index.candidates(claim('x')), []);
    assert.equal(cache.index.candidates(claim('x', { listenPath: '/v2/' })).length, 1);
    cache.observe('ApiDefinition', 'delete', moved);
    assert.equal(cache.index.size, 0);
  });

  test('an OAS API claims what its document says; status writes do not re-read it', async () => {
    const docs = configMap('docs', { 'oas.yaml': oasDocument('/petstore/') });
    let reads = 0;
    const { lookups } = cluster([docs]);
    const counting: Lookups = {
      ...lookups,
      configMap: (ns, n) => {
        reads++;
        return lookups.configMap(ns, n);
      },
    };
    const cache = cacheOver(counting);
    const api = {
      ...oasApi('pets', 'docs'),
      metadata: { name: 'pets', namespace: 'default', generation: 1 },
    };
    cache.observe('SvcOasApiDefinition', 'add', api);
    await cache.markSynced();
    assert.equal(cache.index.candidates(claim('x', { listenPath: '/petstore/' }))[0]?.name, 'pets');
    cache.observe('SvcOasApiDefinition', 'update', { ...api, status: { ready: true } }, api);
    assert.equal(reads, 1);
  });

  test('a document change admitted by the ConfigMap webhook is cached at once, then confirmed', async () => {
    const docs = configMap('docs', { 'oas.yaml': oasDocument('/petstore/') });
    const { lookups, objects } = cluster([docs, oasApi('pets', 'docs')]);
    const cache = cacheOver(lookups);
    cache.observe('SvcOasApiDefinition', 'add', oasApi('pets', 'docs'));
    await cache.markSynced();
    const changed = configMap('docs', { 'oas.yaml': oasDocument('/shop/') });
    cache.noteConfigMap('default', 'docs', { data: changed.data });
    // Held beside the old claim until the write is seen.
    assert.equal(cache.index.candidates(claim('x', { listenPath: '/shop/' })).length, 1);
    assert.equal(cache.index.candidates(claim('x', { listenPath: '/petstore/' })).length, 1);
    objects[0] = changed; // the write lands
    await until(
      'the old claim to be dropped',
      () => cache.index.claimsOf('SvcOasApiDefinition/default/pets').length === 1,
    );
    assert.equal(cache.index.candidates(claim('x', { listenPath: '/petstore/' })).length, 0);
    assert.equal(cache.index.candidates(claim('x', { listenPath: '/shop/' })).length, 1);
  });
});

test('an internal API claims no route (it is served to no client; the Gateway API controller writes several on one path)', () => {
  const internal = apiDefinition('rule', {
    internal: true,
    proxy: { listen_path: '/pets/', target_url: 'http://u' },
  });
  assert.equal(apiDefinitionClaim(internal), undefined);
  assert.ok(
    apiDefinitionClaim(apiDefinition('served', { proxy: { listen_path: '/pets/', target_url: 'http://u' } })),
  );
});

describe('findConflict', () => {
  const objects = [apiDefinition('pets'), apiDefinition('cats')];
  const newPets = apiDefinitionClaim(
    apiDefinition('new-pets', { proxy: { listen_path: '/pets/', target_url: 'http://u' } }),
  );
  assert.ok(newPets !== undefined);

  test('with a synced cache, no API is listed', async () => {
    const { lookups, calls } = cluster(objects);
    const cache = cacheOver(lookups);
    for (const o of objects) cache.observe(kindOf(o), 'add', o);
    await cache.markSynced();
    const other = await findConflict(newPets, { ...lookups, routeClaims: cache });
    assert.equal(other?.name, 'pets');
    assert.equal(calls.list, 0);
  });

  test('until the cache has synced, every API is listed', async () => {
    const { lookups, calls } = cluster(objects);
    const cache = cacheOver(lookups);
    const other = await findConflict(newPets, { ...lookups, routeClaims: cache });
    assert.equal(other?.name, 'pets');
    assert.equal(calls.list, 3);
  });

  test('the validator refuses through the cache, naming the other API', async () => {
    const { lookups, calls } = cluster(objects);
    const cache = cacheOver(lookups);
    for (const o of objects) cache.observe(kindOf(o), 'add', o);
    await cache.markSynced();
    const obj = apiDefinition('new-pets', { proxy: { listen_path: '/pets/', target_url: 'http://u' } });
    const verdict = await validateApiDefinition(obj, undefined, { ...lookups, routeClaims: cache });
    assert.equal(verdict.errors.length, 1);
    assert.match(verdict.errors[0]?.message ?? '', /already claimed by ApiDefinition default\/pets/);
    assert.equal(calls.list, 0);
  });
});
