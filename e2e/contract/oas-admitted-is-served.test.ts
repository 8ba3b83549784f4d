/**
 * The contract for OAS APIs: a document the webhooks admit in the ConfigMap of an
 * SvcOasApiDefinition is never refused by the gateway's `/svc/apis/oas` (and one the webhooks
 * refuse for what it says, the gateway refuses too). The example of examples/ and a table of
 * documents go through the webhooks' validation and the gateway's check of a stored API. Pure
 * functions only: no API server, no gateway process.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { checkStoredApi, type CompileEnv } from '../../gateway/routes/check.ts';
import { oasDocument, requiring } from '../../schemas/testing.ts';
import { formatFieldError } from '../../webhooks/field-error.ts';
import { memoryLookups } from '../../webhooks/memory-lookups.ts';
import { validateSvcOasApiDefinition } from '../../webhooks/oas-api-definition.validate.ts';
import { configMap, oasApi } from '../../webhooks/testing.ts';

type Json = Record<string, unknown>;

const root = path.join(import.meta.dirname, '..', '..');
const env: CompileEnv = { listenPort: 8080, controlPort: undefined, tls: true };

/** The webhooks' verdict on the document in a ConfigMap, and the gateway's on the same document. */
async function bothVerdicts(doc: Json): Promise<{ webhooks: string[]; gateway: string[] }> {
  const lookups = memoryLookups([configMap('pets-oas', { 'oas.yaml': stringify(doc) })]);
  const verdict = await validateSvcOasApiDefinition(oasApi('pets', 'pets-oas'), undefined, lookups);
  return { webhooks: verdict.errors.map(formatFieldError), gateway: checkStoredApi(doc, env).problems };
}

const token = requiring('token', { type: 'apiKey', in: 'header', name: 'Authorization' });
const basic = requiring('basic', { type: 'http', scheme: 'basic' });

const table: { name: string; doc: Json; admitted: boolean }[] = [
  { name: 'keyless', doc: oasDocument(), admitted: true },
  { name: 'a token', doc: oasDocument({}, ...token), admitted: true },
  {
    name: 'a token in the query and a cookie, stripped',
    doc: oasDocument(
      { strip: true },
      ...requiring(
        'key',
        { type: 'apiKey', in: 'query', name: 'api_key' },
        { cookie: { enabled: true, name: 'session' } },
        { stripAuthorizationData: true },
      ),
    ),
    admitted: true,
  },
  { name: 'basic authentication', doc: oasDocument({}, ...basic), admitted: true },
  {
    name: 'IP lists, an API rate limit and a custom domain',
    doc: oasDocument(
      {},
      {
        middleware: {
          global: {
            ipAllowList: { enabled: true, allow: ['10.0.0.0/8'] },
            ipBlockList: { enabled: true, block: ['10.0.0.1'] },
            rateLimit: { enabled: true, rate: 100, per: '1m' },
          },
        },
        server: {
          customDomain: { enabled: true, name: 'pets.example.com' },
          detailedTracing: { enabled: true },
        },
      },
    ),
    admitted: true,
  },
  {
    name: 'a middleware the gateway does not serve',
    doc: oasDocument({}, { middleware: { global: { contextVariables: { enabled: true } } } }),
    admitted: false,
  },
  {
    name: 'CORS, served',
    doc: oasDocument({}, { middleware: { global: { cors: { enabled: true } } } }),
    admitted: true,
  },
  {
    name: 'a window of 500ms',
    doc: oasDocument({}, { middleware: { global: { rateLimit: { enabled: true, rate: 1, per: '500ms' } } } }),
    admitted: false,
  },
  {
    name: 'a required scheme not enabled',
    doc: oasDocument({}, ...requiring('t', { type: 'apiKey', in: 'header', name: 'X' }, { enabled: false })),
    admitted: false,
  },
  { name: 'an oauth2 scheme', doc: oasDocument({}, ...requiring('o', { type: 'oauth2' })), admitted: false },
  { name: "the management API's path", doc: oasDocument({ listenPath: '/svc/pets/' }), admitted: false },
  { name: 'an ftp upstream', doc: oasDocument({ target: 'ftp://files' }), admitted: false },
  { name: 'an ID the gateway refuses', doc: oasDocument({ id: 'a b' }), admitted: false },
  {
    name: 'security per operation',
    doc: oasDocument({}, token[0], { ...token[1], paths: { '/pets': { get: { security: [] } } } }),
    admitted: false,
  },
];

describe('an OAS document the webhooks admit is never refused by the gateway', async () => {
  const examples = await readFile(path.join(root, 'examples', 'oas-api-definition.yaml'), 'utf8');
  const cm = parseAllDocuments(examples)
    .map((d) => d.toJS() as Json)
    .find((o) => o.kind === 'ConfigMap') as { data: Record<string, string> } | undefined;
  const example = parseAllDocuments(cm?.data['oas.yaml'] ?? '')[0]?.toJS() as Json;
  for (const c of [{ name: 'examples/oas-api-definition.yaml', doc: example, admitted: true }, ...table]) {
    test(c.name, async () => {
      const { webhooks, gateway } = await bothVerdicts(c.doc);
      assert.equal(webhooks.length === 0, c.admitted, webhooks.join('\n'));
      assert.equal(gateway.length === 0, c.admitted, gateway.join('\n'));
    });
  }
});
