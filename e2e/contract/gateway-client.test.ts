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

test('a classic API: false and nothing written when the gateway has none; written when it has one', async () => {
  assert.equal(await client.updateApiIfExists('classic', api('first')), false);
  assert.equal(await client.getApi('classic'), undefined);
  await client.createApi(api('first'));
  assert.equal(await client.updateApiIfExists('classic', api('second')), true);
  assert.equal((await client.getApi('classic'))?.name, 'second');
});

test('an OAS API: the same', async () => {
  assert.equal(await client.updateOasApiIfExists('pets', oas('first')), false);
  assert.equal(await client.getOasApi('pets'), undefined);
  await client.createOasApi(oas('first'));
  assert.equal(await client.updateOasApiIfExists('pets', oas('second')), true);
  assert.equal(((await client.getOasApi('pets'))?.info as { title?: string } | undefined)?.title, 'second');
});

test('a policy: the same', async () => {
  assert.equal(await client.updatePolicyIfExists('gold', policy('first')), false);
  assert.equal(await client.getPolicy('gold'), undefined);
  await client.createPolicy(policy('first'));
  assert.equal(await client.updatePolicyIfExists('gold', policy('second')), true);
  assert.equal((await client.getPolicy('gold'))?.name, 'second');
});

test('a document the gateway refuses is an error, not "absent"', async () => {
  const bad = { ...policy('bad'), rate: -1 };
  await assert.rejects(client.updatePolicyIfExists('gold', bad), /rate/);
  assert.equal((await client.getPolicy('gold'))?.name, 'second');
});
