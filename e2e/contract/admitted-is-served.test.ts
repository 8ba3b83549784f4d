/**
 * The contract between the parts: a manifest the webhooks admit is never refused by the gateway.
 * Every ApiDefinition of examples/ and every input of the translator's golden tests goes through
 * the webhooks' defaulting and validation, the operator's translation, and the gateway's check of
 * a management write (with TLS configured: what depends on the gateway's configuration is not
 * the webhooks' to know). A table of listen paths, targets and settings checks that the two sides
 * give the same verdict. Pure functions only: no API server, no gateway process.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { API_VERSION } from '../../schemas/common.ts';
import type { CompileEnv } from '../../gateway/routes/check.ts';
import type { ApiDefinitionInput } from '../../operator/translate/api-definition.ts';
import { defaultApiDefinition } from '../../webhooks/api-definition.default.ts';
import { validateApiDefinition } from '../../webhooks/api-definition.validate.ts';
import { formatFieldError } from '../../webhooks/field-error.ts';
import { memoryLookups } from '../../webhooks/memory-lookups.ts';
import { apiDefinition } from '../../webhooks/testing.ts';
import type { ResolvedGraph } from '../../schemas/rules/graphs.ts';
import { translatedVerdict } from './gateway-verdict.ts';

const root = path.join(import.meta.dirname, '..', '..');
const env: CompileEnv = { listenPort: 8080, controlPort: undefined, tls: true };

/** The webhooks' verdict (their problems), and the gateway's on what the operator would write. */
async function throughEveryPart(
  input: ApiDefinitionInput & { graph?: ResolvedGraph },
): Promise<{ webhooks: string[]; gateway: string[] }> {
  // `graph`: what the reconciler resolves graphql.graph_ref to (given beside the golden inputs).
  const { graph, ...manifest } = input;
  const obj = defaultApiDefinition({ apiVersion: API_VERSION, kind: 'ApiDefinition', ...manifest });
  const verdict = await validateApiDefinition(obj, undefined, memoryLookups([]));
  return {
    webhooks: verdict.errors.map(formatFieldError),
    gateway: translatedVerdict(obj as ApiDefinitionInput, env, graph),
  };
}

/** Every ApiDefinition the project ships or tests translation with, and whether it is admitted. */
async function corpus(): Promise<{ name: string; manifest: ApiDefinitionInput }[]> {
  const out: { name: string; manifest: ApiDefinitionInput }[] = [];
  const examples = await readFile(path.join(root, 'examples', 'api-definition.yaml'), 'utf8');
  for (const doc of parseAllDocuments(examples)) {
    const m = doc.toJS() as ApiDefinitionInput;
    out.push({ name: `examples/api-definition.yaml ${m.metadata.name}`, manifest: m });
  }
  const dir = path.join(root, 'operator', 'translate', 'testdata');
  const inputs = (await readdir(dir)).filter(
    (f) => f.startsWith('api-definition.') && f.endsWith('.in.yaml'),
  );
  for (const file of inputs.sort()) {
    out.push({
      name: file,
      manifest: parse(await readFile(path.join(dir, file), 'utf8')) as ApiDefinitionInput,
    });
  }
  return out;
}

/** Which of the corpus the webhooks admit; the others use settings the gateway does not enforce yet. */
const admittedExpected: Record<string, boolean> = {
  'examples/api-definition.yaml httpbin': true,
  'examples/api-definition.yaml orders': true,
  'api-definition.basic-auth.in.yaml': true,
  'api-definition.keyless.in.yaml': true,
  'api-definition.default-auth.in.yaml': true,
  'api-definition.certificates.in.yaml': true,
  'api-definition.jwt.in.yaml': true,
  'api-definition.internal-targets.in.yaml': true,
  'api-definition.tcp.in.yaml': true,
  'api-definition.tls.in.yaml': true,
  'api-definition.client-certificate-refs.in.yaml': true,
  'api-definition.upstream-certificate-refs.in.yaml': true,
  'api-definition.pinned-public-keys-refs.in.yaml': true,
  'api-definition.subgraph-ref.in.yaml': true,
  'api-definition.supergraph-ref.in.yaml': true,
};

describe('a manifest the webhooks admit is never refused by the gateway', async () => {
  for (const { name, manifest } of await corpus()) {
    test(name, async () => {
      const { webhooks, gateway } = await throughEveryPart(manifest);
      assert.equal(webhooks.length === 0, admittedExpected[name], webhooks.join('\n'));
      if (webhooks.length === 0) assert.deepEqual(gateway, [], 'admitted, so the gateway serves it');
    });
  }
});

describe('the webhooks and the gateway give the same verdict', () => {
  const specs: { name: string; spec: Record<string, unknown>; served: boolean }[] = [
    {
      name: 'a target without scheme',
      spec: { proxy: { listen_path: '/a/', target_url: 'httpbin.org' } },
      served: true,
    },
    ...['tcp://db:1', 'tls://db:1', 'h2c://db:1', 'ws://db:1', 'wss://db:1', 'ftp://db'].map((t) => ({
      name: `target ${t}`,
      spec: { proxy: { listen_path: '/a/', target_url: t } },
      served: false,
    })),
    ...['/hello', '/ready/x', '/svc/apis', '/SVC/', '/p/./', '//p/', '/p%2F', '/a b/'].map((lp) => ({
      name: `listen path ${lp}`,
      spec: { proxy: { listen_path: lp, target_url: 'http://u' } },
      served: false,
    })),
    {
      name: 'listen path /P/',
      spec: { proxy: { listen_path: '/P/', target_url: 'http://u' } },
      served: true,
    },
    {
      name: 'protocol h2c',
      spec: { protocol: 'h2c', listen_port: 9000 },
      served: false,
    },
    ...['tcp', 'tls'].map((protocol) => ({
      name: `protocol ${protocol} to a tcp:// target`,
      spec: { protocol, listen_port: 9000, proxy: { target_url: 'tcp://db:5432' } },
      served: true,
    })),
    ...['tcp', 'tls'].map((protocol) => ({
      name: `protocol ${protocol} with a listen path and basic auth`,
      spec: {
        protocol,
        listen_port: 9000,
        use_keyless: false,
        use_basic_auth: true,
        proxy: { listen_path: '/db/', target_url: 'tcp://db:5432' },
      },
      served: false,
    })),
    { name: 'protocol https on its own port', spec: { protocol: 'https', listen_port: 8443 }, served: true },
    { name: 'a bad domain', spec: { domain: 'a*.example.com' }, served: false },
    { name: 'a wildcard in an IP list', spec: { allowed_ips: ['10.*'] }, served: false },
    { name: 'CORS', spec: { CORS: { enable: true } }, served: true },
    {
      name: 'OAuth2 client credentials',
      spec: {
        use_keyless: false,
        use_oauth2: true,
        oauth_meta: { allowed_access_types: ['client_credentials'] },
      },
      served: true,
    },
    { name: 'OAuth2 without its grant', spec: { use_oauth2: true }, served: false },
    {
      name: 'OAuth2 authorization code',
      spec: { use_oauth2: true, oauth_meta: { allowed_access_types: ['authorization_code'] } },
      served: false,
    },
    { name: 'OpenID Connect (not supported yet)', spec: { use_openid: true }, served: false },
    { name: 'an API-wide rate limit', spec: { global_rate_limit: { rate: 10, per: 1 } }, served: true },
    {
      name: 'a data graph in its version 2 form: REST, GraphQL and another API as sources',
      spec: {
        proxy: { listen_path: '/g/', target_url: '' },
        graphql: {
          enabled: true,
          execution_mode: 'executionEngine',
          version: '2',
          schema: 'type Query { a: String b: String c: String }',
          engine: {
            data_sources: [
              {
                kind: 'REST',
                root_fields: [{ type: 'Query', fields: ['a'] }],
                config: { url: 'http://u/{{.request.headers.x}}', body: '' },
              },
              {
                kind: 'GraphQL',
                root_fields: [{ type: 'Query', fields: ['b'] }],
                config: { url: 'http://g/graphql', body: '' },
              },
              {
                kind: 'REST',
                root_fields: [{ type: 'Query', fields: ['c'] }],
                config: { url: 'svc://users/x' },
              },
            ],
          },
        },
      },
      served: true,
    },
    {
      name: 'a data graph in its version 2 form with a Kafka source',
      spec: {
        proxy: { listen_path: '/g/', target_url: '' },
        graphql: {
          enabled: true,
          execution_mode: 'executionEngine',
          version: '2',
          schema: 'type Query { a: String b: String c: String }',
          engine: {
            data_sources: [
              { kind: 'Kafka', root_fields: [{ type: 'Query', fields: ['a'] }], config: { topics: ['t'] } },
            ],
          },
        },
      },
      served: false,
    },
    {
      name: 'a version 2 data graph without graphql.version "2"',
      spec: {
        proxy: { listen_path: '/g/', target_url: '' },
        graphql: {
          enabled: true,
          execution_mode: 'executionEngine',
          version: '1',
          schema: 'type Query { a: String b: String c: String }',
          engine: {
            data_sources: [
              { kind: 'REST', root_fields: [{ type: 'Query', fields: ['a'] }], config: { url: 'http://u' } },
            ],
          },
        },
      },
      served: false,
    },
    {
      name: "a version 2 data source written the reference's way (tyk://)",
      spec: {
        proxy: { listen_path: '/g/', target_url: '' },
        graphql: {
          enabled: true,
          execution_mode: 'executionEngine',
          version: '2',
          schema: 'type Query { a: String b: String c: String }',
          engine: {
            data_sources: [
              {
                kind: 'REST',
                root_fields: [{ type: 'Query', fields: ['a'] }],
                config: { url: 'tyk://users/x' },
              },
            ],
          },
        },
      },
      served: false,
    },
    {
      name: 'JWT',
      spec: {
        use_keyless: false,
        enable_jwt: true,
        jwt_signing_method: 'rsa',
        jwt_source: 'https://idp/jwks',
      },
      served: true,
    },
    {
      name: 'JWT with a JWKS for HMAC',
      spec: {
        use_keyless: false,
        enable_jwt: true,
        jwt_signing_method: 'hmac',
        jwt_source: 'https://idp/jwks',
      },
      served: false,
    },
    {
      name: 'two authentication methods',
      spec: { use_keyless: false, use_standard_auth: true, use_basic_auth: true },
      served: true,
    },
    {
      name: 'a base identity the API does not run',
      spec: { use_keyless: false, use_basic_auth: true, base_identity_provided_by: 'jwt_claim' },
      served: false,
    },
    {
      name: 'signature validation of tokens',
      spec: {
        use_keyless: false,
        use_standard_auth: true,
        auth: {
          validate_signature: true,
          signature: { algorithm: 'VendorMD5', header: 'X-Signature', secret: 's', allowed_clock_skew: 2 },
        },
      },
      served: true,
    },
    {
      name: 'a signature secret read from the environment',
      spec: {
        use_keyless: false,
        use_standard_auth: true,
        auth: {
          validate_signature: true,
          signature: { algorithm: 'VendorMD5', header: 'X-Signature', secret: '$secret_env.SIG' },
        },
      },
      served: false,
    },
    {
      name: 'a plugin outside the plugin directory',
      spec: { custom_middleware: { driver: 'svc', pre: [{ name: 'f', path: '../f.ts' }] } },
      served: false,
    },
    {
      name: 'a body regexp without a group',
      spec: {
        use_keyless: false,
        use_basic_auth: true,
        basic_auth: { extract_from_body: true, body_user_regexp: 'u=.*', body_password_regexp: 'p=(.*)' },
      },
      served: false,
    },
  ];
  for (const c of specs) {
    test(c.name, async () => {
      const { webhooks, gateway } = await throughEveryPart(
        apiDefinition('a', c.spec) as unknown as ApiDefinitionInput,
      );
      assert.equal(webhooks.length === 0, c.served, `webhooks: ${webhooks.join('; ')}`);
      assert.equal(gateway.length === 0, c.served, `gateway: ${gateway.join('; ')}`);
    });
  }
});
