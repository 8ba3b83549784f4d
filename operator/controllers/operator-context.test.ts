import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger } from '../../lib/log.ts';
import { Connections } from '../connections.ts';
import {
  CONTEXT_FINALIZER,
  contextsOfSecret,
  reconcileOperatorContext,
  type ContextObject,
  type OperatorContextDeps,
} from './operator-context.ts';
import { FakeGateway, NOW, assertReady, fakeEvents, fakeObjects } from './testing.ts';

function context(name: string, spec: ContextObject['spec'], namespace = 'shop'): ContextObject {
  return {
    apiVersion: 'svc.svc.io/v1alpha1',
    kind: 'OperatorContext',
    metadata: { name, namespace, generation: 1, finalizers: [CONTEXT_FINALIZER] },
    spec,
  };
}

/** Deps over real Connections whose Secrets are the map `secrets` (`namespace/name` to data). */
function deps(obj: ContextObject, secrets: Map<string, Record<string, string>>) {
  const objects = { ...fakeObjects<ContextObject>(), get: () => Promise.resolve(obj) };
  const events = fakeEvents();
  const connections = new Connections({
    default: { mode: 'ce', url: 'http://default:8080', auth: 'x', org: 'o', insecureSkipVerify: false },
    contexts: objects as never,
    secrets: (namespace, name) => Promise.resolve(secrets.get(`${namespace}/${name}`)),
    makeClient: (conn) => new FakeGateway(conn.url),
  });
  const d: OperatorContextDeps = {
    objects,
    connections,
    events,
    usersOf: () => [],
    now: () => NOW,
    log: silentLogger(),
  };
  return { d, objects, events };
}

describe('reconcileOperatorContext', () => {
  const ctx = context('second', { env: { mode: 'ce', url: 'http://gw2:8080' }, secretRef: { name: 'conf' } });

  test('a Secret that does not exist yet: Ready=False SecretNotFound, then Ready once it exists', async () => {
    const secrets = new Map<string, Record<string, string>>();
    const before = deps(ctx, secrets);
    const result = await reconcileOperatorContext('shop/second', before.d);
    assertReady(before.objects.statuses.at(-1), {
      status: 'False',
      reason: 'SecretNotFound',
      message: /Secret shop\/conf does not exist/,
    });
    assert.match(before.events.lines[0] ?? '', /^Warning SecretNotFound: /);
    // Checked again later too, for a Secret outside the watched namespaces.
    assert.deepEqual(result, { requeueAfterMs: 60_000 });

    secrets.set('shop/conf', { SVC_AUTH: 'secret', SVC_ORG: 'org-2' });
    const after = deps(ctx, secrets);
    assert.deepEqual(await reconcileOperatorContext('shop/second', after.d), {});
    assertReady(after.objects.statuses.at(-1), {
      status: 'True',
      reason: 'Resolved',
      message: /mode ce at http:\/\/gw2:8080/,
    });
    assert.deepEqual(after.events.lines, []);
  });

  test('an incomplete Secret: ContextInvalid', async () => {
    const secrets = new Map([['shop/conf', { SVC_ORG: 'org-2' }]]);
    const { d, objects } = deps(ctx, secrets);
    await reconcileOperatorContext('shop/second', d);
    assertReady(objects.statuses.at(-1), { status: 'False', reason: 'ContextInvalid', message: /auth/ });
  });
});

describe('contextsOfSecret', () => {
  const secret = (name: string, namespace: string) => ({
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, namespace },
  });
  const contexts = [
    context('same-ns', { secretRef: { name: 'conf' } }),
    context('other-ns', { secretRef: { name: 'conf', namespace: 'shop' } }, 'team'),
    context('other-secret', { secretRef: { name: 'other' } }),
    context('env-only', { env: { mode: 'ce' } }),
  ];
  test('maps a Secret to the contexts whose secretRef names it', () => {
    assert.deepEqual(contextsOfSecret(contexts, secret('conf', 'shop')), ['shop/same-ns', 'team/other-ns']);
    assert.deepEqual(contextsOfSecret(contexts, secret('conf', 'team')), []);
    assert.deepEqual(contextsOfSecret(contexts, undefined), []);
  });
});
