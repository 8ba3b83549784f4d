/**
 * The statuses the operator writes, held to kstatus's rules (lib/testing/kstatus.ts, as Flux's
 * health checks compute them): Current once Ready for the object's generation, InProgress while
 * the operator waits or retries, Failed when nothing happens until the object changes, and back
 * to Current once fixed, for every reason the reconcilers report.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { silentLogger } from '../../lib/log.ts';
import { kstatusOf, type KstatusResult } from '../../lib/testing/kstatus.ts';
import type { SvcObject } from '../../lib/k8s/objects.ts';
import { Connections } from '../connections.ts';
import { CONTEXT_FINALIZER, reconcileOperatorContext, type ContextObject } from './operator-context.ts';
import { reportFailure, reportSuccess, type ReconcileStatus } from './status.ts';
import { FakeGateway, NOW, fakeEvents, fakeObjects } from './testing.ts';

type Obj = SvcObject<unknown, ReconcileStatus>;

function object(generation = 1, status?: ReconcileStatus): Obj {
  return {
    apiVersion: 'svc.svc.io/v1alpha1',
    kind: 'ApiDefinition',
    metadata: { name: 'a', namespace: 'shop', generation },
    spec: {},
    ...(status ? { status } : {}),
  };
}

/** Reports `outcome` on `obj` (generation observed) and returns the status written. */
async function report(obj: Obj, outcome: { ok: true } | { ok: false; reason: string }): Promise<Obj> {
  const objects = fakeObjects<Obj>();
  const deps = { objects, events: fakeEvents(), now: () => NOW };
  const status = { ...obj.status, observedGeneration: obj.metadata.generation };
  if (outcome.ok) {
    await reportSuccess(obj, status, { reason: 'Synced', message: 'held', what: 'API a', where: 'gw' }, deps);
  } else {
    await reportFailure(
      obj,
      status,
      { reason: outcome.reason, message: `why ${outcome.reason}`, call: false },
      deps,
    );
  }
  // Nothing written when nothing changed: the object stays as it was.
  const written = objects.statuses.at(-1) as ReconcileStatus | undefined;
  return written === undefined ? obj : { ...obj, status: written };
}

const types = (o: Obj): string[] => (o.status?.conditions ?? []).map((c) => `${c.type}=${c.status}`);

describe('kstatus of what the reconcilers report', () => {
  const cases: { reason: string; want: KstatusResult['status'] }[] = [
    // Waiting for a referenced object: the operator is queued again when it appears.
    ...[
      'ApiNotFound',
      'ApiNotReady',
      'PolicyNotFound',
      'PolicyNotReady',
      'SecretNotFound',
      'ContextNotFound',
      'ConfigMapNotFound',
      'ConfigMapKeyNotFound',
      'TemplateNotFound',
      'ServiceNotFound',
      'PortNotFound',
      'APIDescriptionNotFound',
      'APIDescriptionNotReady',
    ].map((reason) => ({ reason, want: 'InProgress' as const })),
    // Retried or waited out by the operator.
    ...['Pending', 'InUse', 'GatewayUnavailable', 'GatewayUnauthorized'].map((reason) => ({
      reason,
      want: 'InProgress' as const,
    })),
    // Needs a change of the object (or of the gateway's mind): nothing happens until then.
    ...[
      'SpecInvalid',
      'GatewayRejected',
      'ContextInvalid',
      'SecretInvalid',
      'DocumentInvalid',
      'DocumentTooLarge',
      'TemplateInvalid',
      'PathInvalid',
      'PathConflict',
      'LicenseInvalid',
      'ModeNotSupported',
      'ExtensionMissing',
      'BackendNotSupported',
      'AnnotationInvalid',
      'KeysNotSupported',
      'NotSupportedInModeCe',
      'Conflict',
    ].map((reason) => ({ reason, want: 'Failed' as const })),
  ];
  for (const { reason, want } of cases) {
    test(`Ready=False ${reason}: ${want}, with the reason's message; fixed: Current`, async () => {
      const failed = await report(object(), { ok: false, reason });
      const k = kstatusOf(failed);
      assert.equal(k.status, want);
      assert.equal(k.message, `why ${reason}`);
      const derived = want === 'Failed' ? 'Stalled=True' : 'Reconciling=True';
      assert.deepEqual(types(failed), ['Ready=False', derived]);
      const fixed = await report(failed, { ok: true });
      assert.deepEqual(kstatusOf(fixed), { status: 'Current', message: 'Resource is current' });
      assert.deepEqual(types(fixed), ['Ready=True'], 'Reconciling and Stalled are removed, never False');
    });
  }

  test('Ready=True for the generation: Current; a new generation not yet reconciled: InProgress', async () => {
    const ready = await report(object(1), { ok: true });
    assert.equal(kstatusOf(ready).status, 'Current');
    const edited = { ...ready, metadata: { ...ready.metadata, generation: 2 } };
    assert.deepEqual(kstatusOf(edited), {
      status: 'InProgress',
      message: 'ApiDefinition generation is 2, but latest observed generation is 1',
    });
    assert.equal(kstatusOf(await report(edited, { ok: true })).status, 'Current');
  });

  test('from Stalled to waiting: Stalled goes, Reconciling comes; a repeated failure keeps its transition time', async () => {
    const stalled = await report(object(), { ok: false, reason: 'SpecInvalid' });
    const waiting = await report(stalled, { ok: false, reason: 'PolicyNotFound' });
    assert.deepEqual(types(waiting), ['Ready=False', 'Reconciling=True']);
    const reconciling = waiting.status?.conditions?.find((c) => c.type === 'Reconciling');
    assert.ok(reconciling);
    assert.equal(reconciling.reason, 'PolicyNotFound');
    assert.equal(reconciling.observedGeneration, 1);
    const later = {
      ...waiting,
      status: {
        ...waiting.status,
        conditions: (waiting.status?.conditions ?? []).map((c) => ({
          ...c,
          lastTransitionTime: '2020-01-01T00:00:00Z',
        })),
      },
    };
    const again = await report(later, { ok: false, reason: 'PolicyNotFound' });
    assert.equal(
      again.status?.conditions?.find((c) => c.type === 'Reconciling')?.lastTransitionTime,
      '2020-01-01T00:00:00Z',
    );
  });

  test('an object being deleted: Terminating', async () => {
    const ready = await report(object(), { ok: true });
    assert.equal(
      kstatusOf({ ...ready, metadata: { ...ready.metadata, deletionTimestamp: '2025-06-01T12:00:00Z' } })
        .status,
      'Terminating',
    );
  });

  test('OperatorContext (its own conditions): SecretNotFound InProgress, ContextInvalid Failed, Resolved Current', async () => {
    const ctx: ContextObject = {
      apiVersion: 'svc.svc.io/v1alpha1',
      kind: 'OperatorContext',
      metadata: { name: 'c', namespace: 'shop', generation: 1, finalizers: [CONTEXT_FINALIZER] },
      spec: { env: { mode: 'ce', url: 'http://gw2:8080' }, secretRef: { name: 'conf' } },
    };
    const run = async (secret: Record<string, string> | undefined): Promise<KstatusResult> => {
      const objects = { ...fakeObjects<ContextObject>(), get: () => Promise.resolve(ctx) };
      const connections = new Connections({
        default: { mode: 'ce', url: 'http://default:8080', auth: 'x', org: 'o', insecureSkipVerify: false },
        contexts: objects as never,
        secrets: () => Promise.resolve(secret),
        makeClient: (conn) => new FakeGateway(conn.url),
      });
      await reconcileOperatorContext('shop/c', {
        objects,
        connections,
        events: fakeEvents(),
        usersOf: () => [],
        now: () => NOW,
        log: silentLogger(),
      });
      return kstatusOf({ ...ctx, status: objects.statuses.at(-1) as ReconcileStatus });
    };
    assert.equal((await run(undefined)).status, 'InProgress');
    assert.equal((await run({ SVC_ORG: 'o2' })).status, 'Failed');
    assert.equal((await run({ SVC_AUTH: 'a', SVC_ORG: 'o2' })).status, 'Current');
  });
});
