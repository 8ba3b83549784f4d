import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { API_VERSION, kinds, models } from './index.ts';
import { compile, fieldPath, resourceSchema, type SchemaProblem } from './validate.ts';

const checks = new Map(kinds.map((def) => [def.kind, compile(resourceSchema(def))]));
const oasCheck = compile(models.OasApiDocument ?? {});
const examplesDir = join(import.meta.dirname, '..', 'examples');

function check(obj: Record<string, unknown>): SchemaProblem[] {
  const run = checks.get(String(obj.kind));
  assert.ok(run, `no schema for kind ${String(obj.kind)}`);
  return run(obj);
}

test('every example manifest is valid against the full schema of its kind', async () => {
  const files = (await readdir(examplesDir)).filter((f) => f.endsWith('.yaml'));
  const seen = new Set<string>();
  for (const file of files) {
    const docs = parseAllDocuments(await readFile(join(examplesDir, file), 'utf8'));
    for (const doc of docs) {
      const obj = doc.toJS() as Record<string, unknown>;
      if (obj.apiVersion === API_VERSION) {
        seen.add(String(obj.kind));
        assert.deepEqual(check(obj), [], `${file}: ${String(obj.kind)}`);
      } else if (obj.kind === 'ConfigMap') {
        for (const [key, text] of Object.entries(obj.data as Record<string, string>)) {
          assert.deepEqual(oasCheck(parse(text)), [], `${file}: ConfigMap key ${key}`);
        }
      }
    }
  }
  assert.deepEqual(
    [...seen].sort(),
    kinds.map((k) => k.kind).sort(),
    'examples/ holds one manifest of each kind',
  );
});

const base = (kind: string, spec: Record<string, unknown>): Record<string, unknown> => ({
  apiVersion: API_VERSION,
  kind,
  metadata: { name: 'x', namespace: 'default' },
  spec,
});
const api = (spec: Record<string, unknown>) =>
  base('ApiDefinition', { name: 'a', proxy: { listen_path: '/a/', target_url: 'http://u' }, ...spec });

const cases: { name: string; obj: Record<string, unknown>; want: SchemaProblem[] }[] = [
  { name: 'minimal ApiDefinition', obj: api({}), want: [] },
  {
    name: 'protocol outside the enum',
    obj: api({ protocol: 'ftp' }),
    want: [
      {
        path: 'spec.protocol',
        message: 'Unsupported value: must be one of "", "http", "https", "h2c", "tcp", "tls"',
      },
    ],
  },
  {
    name: 'listen_port of the wrong type',
    obj: api({ listen_port: '8080' }),
    want: [{ path: 'spec.listen_port', message: 'Invalid type: must be integer' }],
  },
  {
    name: 'listen_path without a leading slash',
    obj: api({ proxy: { listen_path: 'a/', target_url: 'http://u' } }),
    want: [{ path: 'spec.proxy.listen_path', message: 'Invalid value: must match ^(/|$)' }],
  },
  {
    name: 'unknown field',
    obj: api({ use_keyles: true }),
    want: [
      { path: 'spec.use_keyles', message: 'unknown field: remove it, or check its spelling and nesting' },
    ],
  },
  {
    name: 'missing proxy',
    obj: base('ApiDefinition', { name: 'a' }),
    want: [{ path: 'spec.proxy', message: 'Required value: add this field' }],
  },
  {
    name: 'policy access right with a bad kind and a bad method',
    obj: base('SecurityPolicy', {
      name: 'p',
      access_rights_array: [{ name: 'a', kind: 'Api', allowed_urls: [{ url: '/x', methods: ['FETCH'] }] }],
    }),
    want: [
      {
        path: 'spec.access_rights_array[0].kind',
        message:
          'Unsupported value: must be one of "ApiDefinition", "SvcOasApiDefinition", "SvcStreamsApiDefinition", "HTTPRoute"',
      },
      {
        path: 'spec.access_rights_array[0].allowed_urls[0].methods[0]',
        message:
          'Unsupported value: must be one of "GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "CONNECT", "TRACE"',
      },
    ],
  },
  {
    name: 'rate below -1',
    obj: base('SecurityPolicy', { name: 'p', rate: -5 }),
    want: [{ path: 'spec.rate', message: 'Invalid value: must be >= -1' }],
  },
  {
    name: 'OperatorContext mode outside the enum',
    obj: base('OperatorContext', { env: { mode: 'enterprise', url: 'http://gw:8080' } }),
    want: [{ path: 'spec.env.mode', message: 'Unsupported value: must be one of "ce", "pro"' }],
  },
  {
    name: 'OAS API without keyName',
    obj: base('SvcOasApiDefinition', { svcOAS: { configmapRef: { name: 'cm' } } }),
    want: [{ path: 'spec.svcOAS.configmapRef.keyName', message: 'Required value: add this field' }],
  },
  {
    name: 'wrong apiVersion',
    obj: { ...api({}), apiVersion: 'svc.svc.io/v1' },
    want: [{ path: 'apiVersion', message: 'must be "svc.svc.io/v1alpha1"' }],
  },
];

for (const c of cases) {
  test(`schema: ${c.name}`, () => {
    assert.deepEqual(check(c.obj), c.want);
  });
}

test('OAS document without x-svc-api-gateway is refused, naming the field', () => {
  const doc = { openapi: '3.0.3', info: { title: 't', version: '1' }, paths: {} };
  assert.deepEqual(oasCheck(doc), [{ path: 'x-svc-api-gateway', message: 'Required value: add this field' }]);
});

test('fieldPath turns JSON pointers into field paths', () => {
  assert.equal(fieldPath(''), '');
  assert.equal(fieldPath('/spec/items/0/name'), 'spec.items[0].name');
  assert.equal(fieldPath('/data/a~1b'), 'data["a/b"]');
  assert.equal(fieldPath('/x-svc-api-gateway/info'), 'x-svc-api-gateway.info');
});
