import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { validateConfigMap, validateConfigMapDelete } from './configmap.validate.ts';
import type { FieldError } from './field-error.ts';
import { memoryLookups } from './memory-lookups.ts';
import { apiDefinition, configMap, oasApi, oasDocument, streamsApi, streamsDocument } from './testing.ts';

const old = configMap('docs', { 'oas.yaml': oasDocument(), 'streams.yaml': streamsDocument(), other: 'x' });
const cluster = [
  old,
  oasApi('pets', 'docs'),
  streamsApi('events', 'docs'),
  oasApi('elsewhere', 'docs', 'oas.yaml', 'team'), // its ConfigMap is team/docs, not this one
];
const lookups = memoryLookups(cluster);
const update = (data: Record<string, string>): Record<string, unknown> =>
  configMap('docs', { ...old.data, ...data });

const cases: { name: string; obj: Record<string, unknown>; errors?: FieldError[]; warnings?: string[] }[] = [
  { name: 'a key no API reads may change', obj: update({ other: 'anything' }) },
  { name: 'a valid new document', obj: update({ 'oas.yaml': oasDocument('/pets-v2/') }) },
  {
    name: 'a broken document names the API that reads it',
    obj: update({ 'oas.yaml': 'openapi: [' }),
    errors: [
      {
        path: 'data["oas.yaml"]',
        type: 'Invalid',
        message:
          'SvcOasApiDefinition default/pets reads its document from this key, and would be refused: the document does not parse as JSON or YAML (Flow sequence in block collection must be sufficiently indented and end with a ] at line 1, column 11): fix its syntax',
      },
    ],
  },
  {
    name: 'removing a key an API reads',
    obj: configMap('docs', { 'oas.yaml': oasDocument(), other: 'x' }),
    errors: [
      {
        path: 'data["streams.yaml"]',
        type: 'Invalid',
        message:
          'SvcStreamsApiDefinition default/events reads its document from this key, and would be refused: ConfigMap default/docs has no key "streams.yaml" (it has "oas.yaml", "other"): set keyName to the key that holds the document',
      },
    ],
  },
  {
    name: 'a streams document losing x-svc-streaming',
    obj: update({ 'streams.yaml': oasDocument('/events/') }),
    errors: [
      {
        path: 'data["streams.yaml"]',
        type: 'Required',
        message:
          'SvcStreamsApiDefinition default/events reads its document from this key, and would be refused: the document has no x-svc-streaming extension: add streams, each with an input and an output (or use SvcOasApiDefinition for a plain HTTP API)',
      },
    ],
  },
  {
    name: 'a document growing past the annotation limit (warning)',
    obj: update({ 'oas.yaml': `${oasDocument()}# ${'x'.repeat(300_000)}\n` }),
    warnings: [
      `data["oas.yaml"]: SvcOasApiDefinition default/pets: the document is ${Buffer.byteLength(oasDocument()) + 300_003} bytes; kubectl apply (client-side) copies it into an annotation limited to 262144 bytes: create or replace its ConfigMap, or use kubectl apply --server-side`,
    ],
  },
];

describe('validateConfigMap', () => {
  for (const c of cases) {
    test(c.name, async () => {
      assert.deepEqual(await validateConfigMap(c.obj, old, lookups), {
        errors: c.errors ?? [],
        warnings: c.warnings ?? [],
      });
    });
  }
  test('a ConfigMap no API reads is not checked', async () => {
    const cm = configMap('unrelated', { 'oas.yaml': 'not: [valid' });
    assert.deepEqual(await validateConfigMap(cm, cm, lookups), { errors: [], warnings: [] });
  });
  test('a problem the API already had does not block the update', async () => {
    const broken = configMap('docs', { 'oas.yaml': 'openapi: 2', 'streams.yaml': streamsDocument() });
    const alsoBroken = configMap('docs', {
      'oas.yaml': 'openapi: 2',
      'streams.yaml': streamsDocument(),
      x: 'y',
    });
    const l = memoryLookups([broken, oasApi('pets', 'docs'), streamsApi('events', 'docs')]);
    assert.deepEqual(await validateConfigMap(alsoBroken, broken, l), { errors: [], warnings: [] });
  });
  test('a listen path conflict the change would create', async () => {
    const l = memoryLookups([...cluster, apiDefinition('orders')]);
    const got = await validateConfigMap(update({ 'oas.yaml': oasDocument('/orders/') }), old, l);
    assert.deepEqual(got.errors, [
      {
        path: 'data["oas.yaml"]',
        type: 'Invalid',
        message:
          'SvcOasApiDefinition default/pets reads its document from this key, and would be refused: listen path "/orders/" (no domain) is already claimed by ApiDefinition default/orders on the same gateway: choose another listen path or domain',
      },
    ]);
  });
});

describe('validateConfigMapDelete', () => {
  test('refused while APIs read it, naming them and their keys', async () => {
    assert.deepEqual(await validateConfigMapDelete(old, lookups), {
      errors: [
        {
          path: 'metadata.name',
          type: 'Forbidden',
          message:
            'ConfigMap default/docs is still used by SvcOasApiDefinition default/pets (key "oas.yaml"), SvcStreamsApiDefinition default/events (key "streams.yaml"): delete those APIs, or point their configmapRef at another ConfigMap, first',
        },
      ],
      warnings: [],
    });
  });
  test('admitted when no API reads it', async () => {
    assert.deepEqual(await validateConfigMapDelete(configMap('docs', {}, 'other'), lookups), {
      errors: [],
      warnings: [],
    });
  });
});
