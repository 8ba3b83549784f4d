/**
 * `policies.allow_explicit_policy_id` against real listeners: on (the default), a policy created
 * with an `id` keeps it, and a key applying it by that ID works; off, a body's `id` is refused
 * with 400 naming the field and the setting, and every policy gets a generated ID, which reads,
 * updates and keys use as any other.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { useEcho } from '../testing/echo.ts';
import { keyed, startGateway, type InProcessGateway } from '../testing/harness.ts';

const policy = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  name: 'gold',
  state: 'active',
  rate: 100,
  per: 60,
  quota_max: -1,
  access_rights: { api: { api_id: 'api', versions: ['Default'] } },
  ...extra,
});

const echo = useEcho();

/** A gateway with `argv`, serving the keyed API `api` at `/api/`. */
async function gatewayWith(argv: string[]): Promise<InProcessGateway> {
  const gw = await startGateway({ argv });
  await gw.addApi(keyed('api', '/api/', echo().url));
  await gw.reload();
  return gw;
}

/** Creates a key applying `policyId`, and answers a request with it. */
async function callWithPolicy(gw: InProcessGateway, key: string, policyId: string): Promise<number> {
  const k = await gw.admin('POST', `/svc/keys/${key}`, { apply_policies: [policyId] });
  assert.equal(k.status, 200, k.text);
  return (await gw.request({ path: '/api/x', headers: { authorization: key } })).status;
}

describe('policies.allow_explicit_policy_id on (the default)', () => {
  let gw: InProcessGateway;
  before(async () => {
    gw = await gatewayWith([]);
  });
  after(async () => {
    await gw.stop();
  });

  test('a policy keeps the id it is given; keys apply it by that ID', async () => {
    assert.equal(gw.config.policies_allow_explicit_policy_id, true);
    const res = await gw.admin('POST', '/svc/policies', policy({ id: 'gold' }));
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json, { key: 'gold', status: 'ok', action: 'added' });
    assert.equal((await gw.admin('GET', '/svc/policies/gold')).status, 200);
    assert.equal(await callWithPolicy(gw, 'k-gold', 'gold'), 200);
  });
});

describe('policies.allow_explicit_policy_id off', () => {
  let gw: InProcessGateway;
  before(async () => {
    gw = await gatewayWith(['--policies-allow-explicit-policy-id=false']);
  });
  after(async () => {
    await gw.stop();
  });

  test("a policy's own id is refused with 400 naming the field and the setting; nothing is stored", async () => {
    const res = await gw.admin('POST', '/svc/policies', policy({ id: 'gold' }));
    assert.equal(res.status, 400, res.text);
    assert.deepEqual(res.json, {
      status: 'error',
      message:
        'Validation of Policy failed. Reason: id: explicit policy IDs are refused: leave id out (one is generated), or set policies.allow_explicit_policy_id (SVC_GW_POLICIES_ALLOW_EXPLICIT_POLICY_ID) to true in the gateway configuration',
    });
    assert.equal((await gw.admin('GET', '/svc/policies/gold')).status, 404);
  });

  test('without an id, one is generated: read, updated and applied by keys under it', async () => {
    const res = await gw.admin('POST', '/svc/policies', policy());
    assert.equal(res.status, 200, res.text);
    const id = (res.json as { key: string }).key;
    assert.match(id, /^[0-9a-f]{32}$/);
    assert.equal(await callWithPolicy(gw, 'k-generated', id), 200);
    const update = await gw.admin('PUT', `/svc/policies/${id}`, policy({ id, rate: 1 }));
    assert.equal(update.status, 200, update.text);
    assert.equal((await gw.admin('PUT', '/svc/policies/gold', policy({ id: 'gold' }))).status, 404);
    const listed = (await gw.admin('GET', '/svc/policies')).json as { id: string }[];
    assert.deepEqual(
      listed.map((p) => p.id),
      [id],
    );
  });
});
