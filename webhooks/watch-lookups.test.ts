import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { metaOf } from './access.ts';
import { validateApiDefinition, validateApiDefinitionDelete } from './api-definition.validate.ts';
import { validateConfigMapDelete } from './configmap.validate.ts';
import { CacheNotSyncedError } from './lookups.ts';
import type { Lookups, SvcKind } from './lookups.ts';
import { memoryLookups } from './memory-lookups.ts';
import { validateOperatorContextDelete } from './operator-context.validate.ts';
import { validateSecurityPolicy, validateSecurityPolicyDelete } from './security-policy.validate.ts';
import { apiDefinition, oasApi, operatorContext, securityPolicy } from './testing.ts';
import { WatchedKind, watchLookups } from './watch-lookups.ts';
import type { WatchLookups } from './watch-lookups.ts';

type Obj = Record<string, unknown>;

/**
 * A cluster as the webhook sees it: `stored` is what the API server holds (the live reads), and
 * each kind's cache holds what its watch has delivered so far (`deliver`), which may lag.
 */
function cluster(stored: Obj[] = [], opts: { synced?: boolean } = {}) {
  let objects = [...stored];
  const caches = new Map<string, Map<string, unknown>>();
  const cacheOf = (kind: string): Map<string, unknown> => {
    let c = caches.get(kind);
    if (c === undefined) {
      c = new Map();
      caches.set(kind, c);
    }
    return c;
  };
  const deliver = (obj: Obj, event: 'add' | 'delete' = 'add'): void => {
    const { namespace, name } = metaOf(obj);
    const cache = cacheOf(String(obj.kind));
    if (event === 'delete') cache.delete(`${namespace}/${name}`);
    else cache.set(`${namespace}/${name}`, obj);
  };
  for (const o of stored) deliver(o);
  const liveCalls: string[] = [];
  const live: Lookups = {
    configMap: (ns, n) => {
      liveCalls.push(`configMap ${ns}/${n}`);
      return memoryLookups(objects).configMap(ns, n);
    },
    secretKeys: (ns, n) => {
      liveCalls.push(`secretKeys ${ns}/${n}`);
      return memoryLookups(objects).secretKeys(ns, n);
    },
    get: (kind, ns, n) => {
      liveCalls.push(`get ${kind} ${ns}/${n}`);
      return memoryLookups(objects).get(kind, ns, n);
    },
    list: (kind) => {
      liveCalls.push(`list ${kind}`);
      return memoryLookups(objects).list(kind);
    },
    ingresses: (ns) => {
      liveCalls.push(`ingresses ${ns}`);
      return memoryLookups(objects).ingresses(ns);
    },
  };
  const watched = (kind: string): WatchedKind => {
    const w = new WatchedKind(kind, {
      get: (ns, n) => cacheOf(kind).get(`${ns}/${n}`),
      list: () => [...cacheOf(kind).values()],
    });
    if (opts.synced !== false) w.markSynced();
    return w;
  };
  let clock = 0;
  const lookups: WatchLookups = watchLookups({
    live,
    kinds: {
      ApiDefinition: watched('ApiDefinition'),
      SvcOasApiDefinition: watched('SvcOasApiDefinition'),
      SvcStreamsApiDefinition: watched('SvcStreamsApiDefinition'),
      SecurityPolicy: watched('SecurityPolicy'),
      OperatorContext: watched('OperatorContext'),
      SubGraph: watched('SubGraph'),
      SuperGraph: watched('SuperGraph'),
      APIDescription: watched('APIDescription'),
      PortalAPICatalogue: watched('PortalAPICatalogue'),
    },
    admittedMs: 30_000,
    now: () => clock,
  });
  return {
    lookups,
    liveCalls,
    deliver,
    /** The API server stores `obj` (its watch event is not delivered yet). */
    store(obj: Obj): void {
      const { namespace, name } = metaOf(obj);
      objects = objects.filter(
        (o) => !(o.kind === obj.kind && metaOf(o).namespace === namespace && metaOf(o).name === name),
      );
      objects.push(obj);
    },
    /** The API server removes `obj` (its watch event is not delivered yet). */
    remove(obj: Obj): void {
      const { namespace, name } = metaOf(obj);
      objects = objects.filter(
        (o) => !(o.kind === obj.kind && metaOf(o).namespace === namespace && metaOf(o).name === name),
      );
    },
    /** This webhook admitted a CREATE or UPDATE of `obj`, and the API server stored it. */
    admit(obj: Obj): void {
      this.store(obj);
      lookups.admitted(String(obj.kind) as SvcKind, obj);
    },
    advance(ms: number): void {
      clock += ms;
    },
  };
}

const covering = (name: string, api: string): Obj =>
  securityPolicy(name, { access_rights_array: [{ name: api, namespace: 'default', kind: 'ApiDefinition' }] });

const messages = (v: { errors: { message: string }[] }): string[] => v.errors.map((e) => e.message);

describe('watch lookups: answers from memory', () => {
  test('a create that names existing objects makes no request to the API server', async () => {
    const c = cluster([
      apiDefinition('a'),
      operatorContext('ctx', { env: { mode: 'ce' } }),
      securityPolicy('p'),
    ]);
    const created = apiDefinition('b', { contextRef: { name: 'ctx' }, jwt_default_policies: ['default/p'] });
    const v = await validateApiDefinition(created, undefined, c.lookups);
    assert.deepEqual(v.errors, []);
    assert.deepEqual(v.warnings, []);
    const policy = await validateSecurityPolicy(covering('q', 'a'), undefined, c.lookups);
    assert.deepEqual(policy.warnings, []);
    assert.deepEqual(c.liveCalls, []);
  });

  test('a DELETE with no dependents lists nothing on the API server', async () => {
    const c = cluster([apiDefinition('a'), covering('p', 'other')]);
    const v = await validateApiDefinitionDelete(apiDefinition('a'), c.lookups);
    assert.deepEqual(v.errors, []);
    assert.deepEqual(c.liveCalls, []);
  });

  test('a DELETE with dependents is refused, naming them in order, after a fresh read of each', async () => {
    const c = cluster([apiDefinition('a'), covering('p2', 'a'), covering('p1', 'a')]);
    const v = await validateApiDefinitionDelete(apiDefinition('a'), c.lookups);
    assert.match(
      messages(v)[0] ?? '',
      /still used by SecurityPolicy default\/p1, SecurityPolicy default\/p2:/,
    );
    assert.deepEqual(c.liveCalls, ['get SecurityPolicy default/p1', 'get SecurityPolicy default/p2']);
  });
});

describe('watch lookups: right after a change, before its watch event', () => {
  test('a policy just created blocks the delete of its API', async () => {
    const c = cluster([apiDefinition('a')]);
    c.admit(covering('p', 'a'));
    const v = await validateApiDefinitionDelete(apiDefinition('a'), c.lookups);
    assert.match(messages(v)[0] ?? '', /ApiDefinition default\/a is still used by SecurityPolicy default\/p/);
  });

  test('an API just created that names a policy blocks its delete; once deleted, it does not', async () => {
    const c = cluster([securityPolicy('p')]);
    const api = apiDefinition('a', { jwt_default_policies: ['default/p'] });
    c.admit(api);
    const refused = await validateSecurityPolicyDelete(securityPolicy('p'), c.lookups);
    assert.match(messages(refused)[0] ?? '', /still used by ApiDefinition default\/a/);
    c.remove(api);
    const allowed = await validateSecurityPolicyDelete(securityPolicy('p'), c.lookups);
    assert.deepEqual(allowed.errors, []);
  });

  test('a policy just deleted, still in the cache, no longer blocks the delete', async () => {
    const policy = covering('p', 'a');
    const c = cluster([apiDefinition('a'), policy]);
    c.remove(policy);
    const v = await validateApiDefinitionDelete(apiDefinition('a'), c.lookups);
    assert.deepEqual(v.errors, []);
  });

  test('a policy just changed to cover another API no longer blocks the delete', async () => {
    const c = cluster([apiDefinition('a'), covering('p', 'a')]);
    c.admit(covering('p', 'b'));
    const v = await validateApiDefinitionDelete(apiDefinition('a'), c.lookups);
    assert.deepEqual(v.errors, []);
  });

  test('an admitted object without its namespace is held in the namespace of the review', async () => {
    const c = cluster([apiDefinition('a', {}, 'shop')]);
    const policy = securityPolicy(
      'p',
      { access_rights_array: [{ name: 'a', kind: 'ApiDefinition' }] },
      'shop',
    );
    c.store(policy);
    const { namespace: _ns, ...metadata } = policy.metadata as Obj;
    c.lookups.admitted('SecurityPolicy', { ...policy, metadata }, 'shop');
    const v = await validateApiDefinitionDelete(apiDefinition('a', {}, 'shop'), c.lookups);
    assert.match(messages(v)[0] ?? '', /still used by SecurityPolicy shop\/p/);
  });

  test('a context just used by a new API cannot be deleted', async () => {
    const c = cluster([operatorContext('ctx', { env: { mode: 'ce' } })]);
    c.admit(apiDefinition('a', { contextRef: { name: 'ctx' } }));
    const v = await validateOperatorContextDelete(operatorContext('ctx', {}), c.lookups);
    assert.match(
      messages(v)[0] ?? '',
      /OperatorContext default\/ctx is still used by ApiDefinition default\/a/,
    );
  });

  test('a ConfigMap just referenced by a new OAS API cannot be deleted', async () => {
    const c = cluster([]);
    c.admit(oasApi('pets', 'pets-doc'));
    const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'pets-doc', namespace: 'default' } };
    const v = await validateConfigMapDelete(cm, c.lookups);
    assert.match(
      messages(v)[0] ?? '',
      /ConfigMap default\/pets-doc is still used by SvcOasApiDefinition default\/pets/,
    );
  });

  test('a reference created a moment ago is found: no "does not exist yet" warning', async () => {
    const c = cluster([]);
    // Created by another path (no admission seen here) and not delivered yet: a fresh read finds it.
    c.store(operatorContext('ctx', { env: { mode: 'ce' } }));
    const v = await validateApiDefinition(
      apiDefinition('a', { contextRef: { name: 'ctx' } }),
      undefined,
      c.lookups,
    );
    assert.deepEqual(v.warnings, []);
    assert.deepEqual(c.liveCalls, ['get OperatorContext default/ctx']);
  });

  test('an absent reference is still warned about', async () => {
    const c = cluster([]);
    const v = await validateApiDefinition(
      apiDefinition('a', { contextRef: { name: 'nope' } }),
      undefined,
      c.lookups,
    );
    assert.match(v.warnings.join('\n'), /OperatorContext default\/nope does not exist yet/);
  });

  test('admitted objects are forgotten after a while: the cache has them by then', async () => {
    const c = cluster([apiDefinition('a')]);
    const policy = covering('p', 'a');
    c.admit(policy);
    c.advance(31_000);
    const v = await validateApiDefinitionDelete(apiDefinition('a'), c.lookups);
    assert.deepEqual(v.errors, []);
    c.deliver(policy);
    const after = await validateApiDefinitionDelete(apiDefinition('a'), c.lookups);
    assert.match(messages(after)[0] ?? '', /still used by SecurityPolicy default\/p/);
  });
});

describe('watch lookups: templates and Ingresses', () => {
  const template = apiDefinition('tpl', {}, 'default');
  (template.metadata as Obj).labels = { 'svc.io/template': 'true' };
  const ingress = (name: string): Obj => ({
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: { name, namespace: 'default', annotations: { 'svc.io/template': 'tpl' } },
  });

  test('a template an Ingress uses cannot be deleted; the Ingresses are listed fresh', async () => {
    const c = cluster([template, ingress('web')]);
    const v = await validateApiDefinitionDelete(template, c.lookups);
    assert.match(messages(v)[0] ?? '', /still used by Ingress default\/web/);
    assert.deepEqual(c.liveCalls, ['ingresses default']);
  });

  test('an Ingress just deleted, still in the cache, no longer blocks the template', async () => {
    const web = ingress('web');
    const c = cluster([template, web]);
    c.remove(web);
    const v = await validateApiDefinitionDelete(template, c.lookups);
    assert.deepEqual(v.errors, []);
  });

  test('an Ingress created a moment ago (its watch event not out yet) blocks the template', async () => {
    const c = cluster([template]);
    c.store(ingress('new'));
    const v = await validateApiDefinitionDelete(template, c.lookups);
    assert.match(messages(v)[0] ?? '', /still used by Ingress default\/new/);
  });

  test('without users, the template goes (after one fresh list of its namespace)', async () => {
    const c = cluster([template]);
    const v = await validateApiDefinitionDelete(template, c.lookups);
    assert.deepEqual(v.errors, []);
    assert.deepEqual(c.liveCalls, ['ingresses default']);
  });
});

describe('watch lookups: before the first list', () => {
  test('a review that needs a cache is refused with a message that says so', async () => {
    const c = cluster([apiDefinition('a')], { synced: false });
    assert.equal(c.lookups.synced(), false);
    await assert.rejects(
      validateApiDefinitionDelete(apiDefinition('a'), c.lookups),
      (err: unknown) =>
        err instanceof CacheNotSyncedError &&
        /has not loaded its cache of SecurityPolicy yet.*retry in a few seconds/.test(err.message),
    );
    assert.deepEqual(c.liveCalls, []);
  });

  test('a review that needs no cache is answered', async () => {
    const c = cluster([], { synced: false });
    const v = await validateSecurityPolicy(securityPolicy('p'), undefined, c.lookups);
    assert.deepEqual(v.errors, []);
    assert.deepEqual(v.warnings, []);
  });
});
