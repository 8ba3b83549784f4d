import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse } from 'yaml';
import type { ApiDefinitionSpec } from '../../schemas/generated/kinds.ts';
import { goldenTests } from './golden.ts';
import { assertAdmittedAndServed } from './testing.ts';
import {
  generatedName,
  ingressApiId,
  oasTemplateSpec,
  translateIngress,
  type IngressInput,
  type IngressTranslation,
  type ServiceInput,
} from './ingress.ts';

/** A golden input: the Ingress and the cluster state it is translated against. */
interface GoldenInput {
  ingress: IngressInput;
  services: Record<string, ServiceInput>;
  secrets: string[];
  template?: ApiDefinitionSpec;
}

const run = (input: GoldenInput): IngressTranslation =>
  translateIngress(input.ingress, {
    service: (name) => input.services[name],
    secretExists: (name) => input.secrets.includes(name),
    template: input.template,
    httpPort: 8080,
    httpsPort: 8443,
  });

await goldenTests('ingress', run, (got) => {
  for (const api of got.apis) {
    // Each generated API is an ApiDefinition the API server admits, and its translation is a
    // definition the gateway serves.
    assertAdmittedAndServed(api);
    assert.ok(api.name.length <= 253 && /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(api.name), api.name);
  }
  const ids = got.apis.map((a) => a.spec.api_id);
  assert.equal(new Set(ids).size, ids.length, 'IDs are unique');
  for (const p of got.problems) assert.ok(p.message.startsWith(p.path), `${p.message} names ${p.path}`);
});

const base: GoldenInput = {
  ingress: {
    metadata: { name: 'web', namespace: 'ns' },
    spec: {
      rules: [
        {
          host: 'a.example.com',
          http: {
            paths: [
              { path: '/x', pathType: 'Prefix', backend: { service: { name: 's', port: { number: 80 } } } },
            ],
          },
        },
      ],
    },
  },
  services: { s: { spec: { ports: [{ port: 80 }] } } },
  secrets: [],
};

test('IDs and names are stable: the same Ingress re-applied gets the same ones, another host others', () => {
  const first = run(base);
  const again = run(structuredClone(base));
  assert.deepEqual(again, first);
  const [api] = first.apis;
  assert.ok(api);
  assert.equal(
    api.spec.api_id,
    ingressApiId('ns', 'web', { scheme: 'http', host: 'a.example.com', path: '/x', pathType: 'Prefix' }),
  );
  assert.equal(api.name, generatedName('web', api.spec.api_id ?? ''));
  const moved = structuredClone(base);
  const rule = moved.ingress.spec?.rules?.[0];
  assert.ok(rule);
  rule.host = 'b.example.com';
  assert.notEqual(run(moved).apis[0]?.spec.api_id, api.spec.api_id);
});

test('translation is pure: the input is untouched', () => {
  const input = structuredClone(base);
  input.template = { name: 't', use_keyless: false, proxy: { listen_path: '/t', target_url: 'http://t' } };
  const frozen = structuredClone(input);
  run(input);
  assert.deepEqual(input, frozen);
});

test('a long Ingress name still gives a resource name within 253 characters', () => {
  const input = structuredClone(base);
  input.ingress.metadata.name = 'a'.repeat(253);
  const [api] = run(input).apis;
  assert.ok(api);
  assert.equal(api.name.length, 253);
});

test('an unknown backend protocol serves nothing and names the annotation', () => {
  const input = structuredClone(base);
  input.ingress.metadata.annotations = { 'svc.io/backend-protocol': 'grpc' };
  const got = run(input);
  assert.deepEqual(got.apis, []);
  assert.equal(got.problems[0]?.reason, 'AnnotationInvalid');
  assert.match(got.problems.map((p) => p.message).join('\n'), /supported values: "http", "https"/);
});

test('a missing Service is a problem to retry; the Service appearing serves the path', () => {
  const input = structuredClone(base);
  input.services = {};
  const missing = run(input);
  assert.deepEqual(missing.apis, []);
  assert.deepEqual(
    missing.problems.map((p) => [p.reason, p.path, p.retry]),
    [['ServiceNotFound', 'spec.rules[0].http.paths[0].backend.service.name', true]],
  );
  input.services = base.services;
  assert.equal(run(input).apis.length, 1);
});

test('an OAS template: its document as a classic spec, without its own ID, organization and version', async () => {
  const doc = parse(
    await readFile(
      join(import.meta.dirname, '..', '..', 'webhooks', 'testdata', 'petstore.oas.yaml'),
      'utf8',
    ),
  ) as Record<string, unknown>;
  const ext = doc['x-svc-api-gateway'] as { info: Record<string, unknown> };
  ext.info.id = 'petstore-id';
  ext.info.orgId = 'org-1';
  const got = oasTemplateSpec(doc);
  assert.ok(got.ok, got.ok ? '' : got.message);
  assert.equal(got.spec.use_standard_auth, true);
  assert.equal(got.spec.use_keyless, false);
  for (const field of ['api_id', 'org_id', 'is_oas', 'version_data']) assert.ok(!(field in got.spec), field);
  // Used as a template, the Ingress supplies the listen path and target.
  const [built] = run({ ...base, template: got.spec }).apis;
  assert.ok(built);
  assert.equal(built.spec.use_standard_auth, true);
  assert.equal(built.spec.proxy.listen_path, '/x');
  assert.equal(built.spec.proxy.target_url, 'http://s.ns.svc:80');
  // A document the gateway would refuse is no template.
  delete (ext as Record<string, unknown>).upstream;
  (ext as Record<string, unknown>).unknownSetting = { on: true };
  const bad = oasTemplateSpec(doc);
  assert.ok(!bad.ok);
  assert.match(bad.message, /^its document does not convert: x-svc-api-gateway\.unknownSetting/);
});

test('HTTP ingress port = the gateway port: no listen_port (served there all the same); HTTPS and other gateways keep it', () => {
  const input = structuredClone(base);
  input.secrets = ['tls'];
  const spec = input.ingress.spec;
  assert.ok(spec);
  spec.rules?.push({
    host: 'secure.example.com',
    http: {
      paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 's', port: { number: 80 } } } }],
    },
  });
  spec.tls = [{ hosts: ['secure.example.com'], secretName: 'tls' }];
  const translate = (template?: GoldenInput['template']) =>
    translateIngress(input.ingress, {
      service: (name) => input.services[name],
      secretExists: () => true,
      template,
      httpPort: 8080,
      httpsPort: 8443,
      gatewayPort: 8080,
    }).apis.map((a) => [a.spec.protocol ?? '-', a.spec.listen_port ?? '-']);
  assert.deepEqual(translate().sort(), [
    ['-', '-'],
    ['https', 8443],
  ]);
  const elsewhere = { name: 't', contextRef: { name: 'other' }, proxy: { listen_path: '/t' } };
  assert.deepEqual(translate(elsewhere).sort(), [
    ['http', 8080],
    ['https', 8443],
  ]);
});
