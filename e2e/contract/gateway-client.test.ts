/**
 * The operator's gateway client against a real gateway: a changed document is written without
 * reading the gateway's copy first (`update...IfExists`: a PUT the gateway answers 404 when it has
 * no such document, issue 33 item 2), for classic APIs, OAS APIs and policies alike. On a
 * document the gateway does not have, the client says so and nothing is written; on one it has,
 * the gateway holds the new version.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { GatewayClient } from '../../operator/clients/gateway.ts';
import type { OasDocument } from '../../operator/clients/management.ts';
import type { GatewayApiDefinition, GatewayPolicy } from '../../schemas/generated/models.ts';
import { SECRET, startGateway, type InProcessGateway } from '../../gateway/testing/harness.ts';

let gw: InProcessGateway;
let client: GatewayClient;

before(async () => {
  gw = await startGateway();
  client = new GatewayClient({
    mode: 'ce',
    url: `http://127.0.0.1:${String(gw.port)}`,
    auth: SECRET,
    org: 'org1',
    insecureSkipVerify: false,
  });
});

after(async () => {
  await client.close();
  await gw.stop();
});

const api = (name: string): GatewayApiDefinition => ({
  api_id: 'classic',
  name,
  org_id: 'org1',
  use_keyless: true,
  active: true,
  proxy: { listen_path: '/classic/', target_url: 'http://127.0.0.1:9', strip_listen_path: true },
});

const oas = (title: string): OasDocument => ({
  openapi: '3.0.3',
  info: { title, version: '1.0.0' },
  paths: {},
  'x-svc-api-gateway': {
    info: { id: 'pets', name: title, state: { active: true } },
    upstream: { url: 'http://127.0.0.1:9' },
    server: { listenPath: { value: '/pets/', strip: true } },
  },
});

const policy = (name: string): GatewayPolicy => ({
  id: 'gold',
  name,
  org_id: 'org1',
  rate: 10,
  per: 1,
  access_rights: {},
});

/** Each kind: a version of its document, and the client's calls on it. */
const kinds = [
  {
    kind: 'a classic API',
    id: 'classic',
    doc: api,
    ifExists: (id: string, d: GatewayApiDefinition) => client.updateApiIfExists(id, d),
    create: (d: GatewayApiDefinition) => client.createApi(d),
    nameOf: async (id: string) => (await client.getApi(id))?.name,
  },
  {
    kind: 'an OAS API',
    id: 'pets',
    doc: oas,
    ifExists: (id: string, d: OasDocument) => client.updateOasApiIfExists(id, d),
    create: (d: OasDocument) => client.createOasApi(d),
    nameOf: async (id: string) =>
      ((await client.getOasApi(id))?.info as { title?: string } | undefined)?.title,
  },
  {
    kind: 'a policy',
    id: 'gold',
    doc: policy,
    ifExists: (id: string, d: GatewayPolicy) => client.updatePolicyIfExists(id, d),
    create: (d: GatewayPolicy) => client.createPolicy(d),
    nameOf: async (id: string) => (await client.getPolicy(id))?.name,
  },
];

for (const k of kinds) {
  test(`${k.kind}: false and nothing written when the gateway has none; written when it has one`, async () => {
    const { id } = k;
    // One shape for the three kinds: each row's functions take its own document.
    const doc = k.doc as (name: string) => never;
    const ifExists = k.ifExists as (id: string, d: never) => Promise<boolean>;
    const create = k.create as (d: never) => Promise<void>;
    assert.equal(await ifExists(id, doc('first')), false);
    assert.equal(await k.nameOf(id), undefined);
    await create(doc('first'));
    assert.equal(await ifExists(id, doc('second')), true);
    assert.equal(await k.nameOf(id), 'second');
  });
}

test('a document the gateway refuses is an error, not "absent"', async () => {
  const bad = { ...policy('bad'), rate: -1 };
  await assert.rejects(client.updatePolicyIfExists('gold', bad), /rate/);
  assert.equal((await client.getPolicy('gold'))?.name, 'second');
});
