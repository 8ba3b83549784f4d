/**
 * `spec.context`, the reference operator's earlier name of `contextRef` (schemas/rules/earlier-names.ts),
 * through the webhooks' own functions: the mutating endpoint moves it with a warning on the kinds
 * that had it (ApiDefinition, SecurityPolicy), the validating one refuses it beside a different
 * contextRef.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mutate, validate } from './server.ts';
import { handlers } from './handlers.ts';
import { memoryLookups } from './memory-lookups.ts';
import { apiDefinition, applyPatch, oasApi, operatorContext, securityPolicy } from './testing.ts';
import type { PatchOp } from './json-patch.ts';

type Obj = Record<string, unknown>;

const handler = (kind: string) => {
  const h = handlers.find((x) => x.kind === kind);
  assert.ok(h, kind);
  return h;
};

/** What the mutating endpoint answers: the object after its patch, and its warnings. */
function mutated(kind: string, obj: Obj): { obj: Obj; warnings: string[] } {
  const r = mutate(handler(kind), {
    uid: 'u',
    operation: 'CREATE',
    object: obj,
    namespace: 'default',
  } as Parameters<typeof mutate>[1]);
  assert.equal(r.allowed, true);
  const ops =
    r.patch === undefined ? [] : (JSON.parse(Buffer.from(r.patch, 'base64').toString()) as PatchOp[]);
  const out = applyPatch(obj, ops) as Obj;
  return { obj: out, warnings: r.warnings ?? [] };
}

const lookups = memoryLookups([
  operatorContext('pro', { env: { mode: 'pro' } }),
  operatorContext('other', {}),
]);

describe('spec.context, the earlier name of contextRef', () => {
  for (const [kind, make] of [
    ['ApiDefinition', (spec: Obj) => apiDefinition('orders', spec)],
    ['SecurityPolicy', (spec: Obj) => securityPolicy('gold', spec)],
  ] as const) {
    test(`${kind}: moved to contextRef with a warning naming both fields`, async () => {
      const { obj, warnings } = mutated(kind, make({ context: { name: 'pro', namespace: 'default' } }));
      const spec = obj.spec as Obj;
      assert.equal(spec.context, undefined);
      assert.deepEqual(spec.contextRef, { name: 'pro', namespace: 'default' });
      assert.equal(warnings.length, 1);
      assert.match(
        warnings[0] ?? '',
        /^spec\.context is the reference operator's earlier name of spec\.contextRef: moved/,
      );
      const v = await validate(
        handler(kind),
        { uid: 'u', operation: 'CREATE', object: obj, namespace: 'default' } as Parameters<
          typeof validate
        >[1],
        lookups,
      );
      assert.equal(v.allowed, true, JSON.stringify(v.status));
    });

    test(`${kind}: the same context in both is moved; a different one is refused naming spec.context`, async () => {
      const same = mutated(kind, make({ context: { name: 'pro' }, contextRef: { name: 'pro' } }));
      assert.equal((same.obj.spec as Obj).context, undefined);
      const { obj, warnings } = mutated(
        kind,
        make({ context: { name: 'pro', namespace: 'default' }, contextRef: { name: 'other' } }),
      );
      assert.deepEqual(warnings, []);
      const v = await validate(
        handler(kind),
        { uid: 'u', operation: 'CREATE', object: obj, namespace: 'default' } as Parameters<
          typeof validate
        >[1],
        lookups,
      );
      assert.equal(v.allowed, false);
      assert.match(
        v.status?.message ?? '',
        /spec\.context: Forbidden: the reference's earlier name of contextRef names OperatorContext default\/pro, but contextRef names default\/other: keep contextRef alone/,
      );
    });
  }

  test('a kind that never had it (SvcOasApiDefinition) keeps refusing it as an unknown field', async () => {
    const { obj, warnings } = mutated('SvcOasApiDefinition', {
      ...oasApi('petstore', 'petstore-doc'),
      spec: { ...(oasApi('petstore', 'petstore-doc').spec as Obj), context: { name: 'pro' } },
    });
    assert.deepEqual(warnings, []);
    const v = await validate(
      handler('SvcOasApiDefinition'),
      { uid: 'u', operation: 'CREATE', object: obj, namespace: 'default' } as Parameters<typeof validate>[1],
      lookups,
    );
    assert.equal(v.allowed, false);
    assert.match(v.status?.message ?? '', /spec\.context: Forbidden: unknown field/);
  });

  test('OperatorContext: fromSecret moved to secretRef with a warning; beside another secretRef refused', async () => {
    const ctx = (spec: Obj): Obj => operatorContext('pro', spec);
    const { obj, warnings } = mutated(
      'OperatorContext',
      ctx({ fromSecret: { name: 'conf', namespace: 'ops' } }),
    );
    const spec = obj.spec as Obj;
    assert.equal(spec.fromSecret, undefined);
    assert.deepEqual(spec.secretRef, { name: 'conf', namespace: 'ops' });
    assert.deepEqual(warnings, [
      "spec.fromSecret is the reference operator's earlier name of spec.secretRef: moved to spec.secretRef (Secret ops/conf); write secretRef in the manifest",
    ]);
    const both = mutated(
      'OperatorContext',
      ctx({ fromSecret: { name: 'conf' }, secretRef: { name: 'other' } }),
    );
    const v = await validate(
      handler('OperatorContext'),
      { uid: 'u', operation: 'CREATE', object: both.obj, namespace: 'default' } as Parameters<
        typeof validate
      >[1],
      lookups,
    );
    assert.equal(v.allowed, false);
    assert.match(
      v.status?.message ?? '',
      /spec\.fromSecret: Forbidden: the reference's earlier name of secretRef names Secret default\/conf, but secretRef names default\/other: keep secretRef alone/,
    );
  });
});
