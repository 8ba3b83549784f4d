import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { JsonSchema } from '../json-schema.ts';
import { kinds, models } from '../index.ts';
import { crdFor, STRUCTURAL_KEYWORDS, structural } from './crd.ts';
import { TypeEmitter } from './types.ts';

/** Every schema node below `schema`, with its field path. */
function* walk(schema: JsonSchema, path: string): Generator<[string, JsonSchema]> {
  yield [path, schema];
  for (const [name, sub] of Object.entries(schema.properties ?? {})) yield* walk(sub, `${path}.${name}`);
  if (typeof schema.additionalProperties === 'object') yield* walk(schema.additionalProperties, `${path}[*]`);
  if (schema.items) yield* walk(schema.items, `${path}[]`);
}

test('every field of every kind and model has a description (kubectl explain shows it)', () => {
  const missing: string[] = [];
  const roots: [string, JsonSchema][] = [
    ...kinds.flatMap((k): [string, JsonSchema][] => [
      [`${k.kind}.spec`, k.spec],
      [`${k.kind}.status`, k.status],
    ]),
    ...Object.entries(models),
  ];
  for (const [name, root] of roots) {
    for (const [path, node] of walk(root, name)) {
      if (!node.description && !path.endsWith('[]') && !path.endsWith('[*]')) missing.push(path);
    }
  }
  assert.deepEqual(missing, []);
});

test('CRD schemas are structural: only keywords the API server accepts', () => {
  const allowed = new Set<string>([...STRUCTURAL_KEYWORDS, 'properties', 'items', 'additionalProperties']);
  const bad: string[] = [];
  const visit = (node: Record<string, unknown>, path: string): void => {
    for (const key of Object.keys(node)) if (!allowed.has(key)) bad.push(`${path}: ${key}`);
    if (node.additionalProperties === false) bad.push(`${path}: additionalProperties false`);
    if (node.properties && node.additionalProperties)
      bad.push(`${path}: properties with additionalProperties`);
    for (const [n, sub] of Object.entries(
      (node.properties ?? {}) as Record<string, Record<string, unknown>>,
    )) {
      visit(sub, `${path}.${n}`);
    }
    if (typeof node.items === 'object') visit(node.items as Record<string, unknown>, `${path}[]`);
    if (typeof node.additionalProperties === 'object') {
      visit(node.additionalProperties as Record<string, unknown>, `${path}[*]`);
    }
  };
  for (const def of kinds) {
    visit(structural(def.spec), `${def.kind}.spec`);
    visit(structural(def.status), `${def.kind}.status`);
  }
  assert.deepEqual(bad, []);
});

test('CRDs carry names, the svc category, the status subresource and printer columns', () => {
  const crd = crdFor(kinds[0] ?? assert.fail('no kinds')) as {
    metadata: { name: string };
    spec: {
      names: { categories: string[]; shortNames: string[] };
      versions: { subresources: unknown; additionalPrinterColumns: { name: string }[] }[];
    };
  };
  assert.equal(crd.metadata.name, 'apidefinitions.svc.svc.io');
  assert.deepEqual(crd.spec.names.categories, ['svc-all']);
  assert.ok(crd.spec.names.shortNames.length > 0);
  const [version] = crd.spec.versions;
  assert.ok(version, 'one version');
  assert.deepEqual(version.subresources, { status: {} });
  assert.deepEqual(
    version.additionalPrinterColumns.map((c) => c.name),
    ['API ID', 'Listen Path', 'Ready', 'Age'],
  );
});

test('the SvcRoutePolicy CRD carries the GEP-713 policy class label; no other CRD has one', () => {
  const label = 'gateway.networking.k8s.io/policy';
  const labels = Object.fromEntries(
    kinds.map((k) => [
      k.kind,
      (crdFor(k) as { metadata: { labels: Record<string, string> } }).metadata.labels,
    ]),
  );
  const policy = labels.SvcRoutePolicy ?? assert.fail('no SvcRoutePolicy kind');
  assert.equal(policy[label], 'Inherited');
  assert.equal(policy['app.kubernetes.io/part-of'], 'svc', "svc's own labels are kept");
  assert.deepEqual(
    Object.entries(labels)
      .filter(([, l]) => label in l)
      .map(([k]) => k),
    ['SvcRoutePolicy'],
  );
});

const typeCases: { name: string; schema: JsonSchema; want: string }[] = [
  {
    name: 'closed object with required and optional fields',
    schema: {
      title: 'T',
      description: 'A thing.',
      type: 'object',
      required: ['a'],
      properties: {
        a: { type: 'string', description: 'The a.' },
        'b-c': { type: 'array', items: { type: 'string', enum: ['x', 'y'] } },
      },
    },
    want: "/** A thing. */\nexport interface T {\n  /** The a. */\n  a: string;\n  'b-c'?: ('x' | 'y')[];\n}\n",
  },
  {
    name: 'map of integers',
    schema: { title: 'M', type: 'object', additionalProperties: { type: 'integer' } },
    want: 'export type M = Record<string, number>;\n',
  },
  {
    name: 'open object keeps unknown fields',
    schema: {
      title: 'O',
      type: 'object',
      properties: { a: { type: 'boolean' } },
      'x-kubernetes-preserve-unknown-fields': true,
    },
    want: 'export interface O {\n  a?: boolean;\n  /** Fields the schema leaves open. */\n  [key: string]: unknown;\n}\n',
  },
];

for (const c of typeCases) {
  test(`types: ${c.name}`, () => {
    const e = new TypeEmitter();
    e.declare(c.schema.title ?? 'X', c.schema);
    assert.equal(e.render(), c.want);
  });
}

test('types: two different schemas with one title are refused', () => {
  const e = new TypeEmitter();
  e.declare('Same', { type: 'object', properties: { a: { type: 'string' } } });
  e.declare('Same', {
    type: 'object',
    description: 'only docs differ',
    properties: { a: { type: 'string' } },
  });
  assert.throws(
    () => e.declare('Same', { type: 'object', properties: { a: { type: 'integer' } } }),
    /two different schemas are both titled Same/,
  );
});
