/**
 * Documents nested too deep (schemas/rules/nesting.ts), against a real listener: an OAS document
 * whose request body schema nests 5,000 levels deep (validated, so every check walks it) is
 * refused with a 400 naming the limit, not answered with an internal error; so is any management
 * body (classic definition, policy, key, organisation); a document nested exactly to the limit is
 * stored, loaded and served.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_NESTING_DEPTH } from '../../schemas/rules/nesting.ts';
import { deepOasDocument, withDeep } from '../../schemas/testing.ts';
import { startEcho, type Echo } from '../testing/echo.ts';
import { keyless, startGateway, type InProcessGateway } from '../testing/harness.ts';
import { stopAll } from '../../lib/testing/teardown.ts';

const refusal = (under: string): { status: string; message: string } => ({
  status: 'error',
  message: `Request malformed: the body is nested more than 128 levels deep (under ${under}): at most 128 objects and lists may be nested in one another`,
});

let echo: Echo;
let gw: InProcessGateway;
before(async () => {
  echo = await startEcho('echo');
  gw = await startGateway();
});
after(async () => {
  await stopAll(gw, echo);
});

describe('management bodies nested too deep: 400 naming the limit', () => {
  const cases: { name: string; method: string; path: string; body: () => unknown; under: string }[] = [
    {
      name: 'an OAS document 5,000 levels deep',
      method: 'POST',
      path: '/svc/apis/oas',
      body: () => deepOasDocument(5000, { target: echo.url }),
      under: 'paths',
    },
    {
      name: 'an OAS document one level past the limit',
      method: 'POST',
      path: '/svc/apis/oas',
      body: () => deepOasDocument(MAX_NESTING_DEPTH + 2, { target: echo.url }),
      under: 'paths',
    },
    {
      name: 'an OAS document update',
      method: 'PUT',
      path: '/svc/apis/oas/deep5000',
      body: () => deepOasDocument(5000, { target: echo.url }),
      under: 'paths',
    },
    {
      name: 'a classic definition',
      method: 'POST',
      path: '/svc/apis',
      body: () => withDeep(keyless('deepc', '/deepc/', echo.url), 'config_data', 5000),
      under: 'config_data',
    },
    {
      name: 'a policy',
      method: 'POST',
      path: '/svc/policies',
      body: () => withDeep({ id: 'deep', name: 'p', rate: 1, per: 1 }, 'meta_data', 5000),
      under: 'meta_data',
    },
    {
      name: 'a key',
      method: 'POST',
      path: '/svc/keys',
      body: () => withDeep({ access_rights: {} }, 'meta_data', 5000),
      under: 'meta_data',
    },
    {
      name: 'an organisation session',
      method: 'POST',
      path: '/svc/org/keys/deep-org',
      body: () => withDeep({}, 'meta_data', 5000),
      under: 'meta_data',
    },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      const res = await gw.admin(c.method, c.path, c.body());
      assert.equal(res.status, 400, res.text);
      assert.deepEqual(res.json, refusal(c.under));
    });
  }
  test('nothing was stored', async () => {
    assert.deepEqual((await gw.admin('GET', '/svc/apis')).json, []);
    assert.deepEqual((await gw.admin('GET', '/svc/policies')).json, []);
  });
});

test('a document nested exactly to the limit is stored, loaded and served', async () => {
  const doc = deepOasDocument(MAX_NESTING_DEPTH, { target: echo.url });
  const res = await gw.admin('POST', '/svc/apis/oas', doc);
  assert.equal(res.status, 200, res.text);
  await gw.reload();
  const post = (body: unknown): ReturnType<typeof gw.request> =>
    gw.request({
      method: 'POST',
      path: `/deep${String(MAX_NESTING_DEPTH)}/items`,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
      fresh: true,
    });
  let valid: unknown = 'x';
  for (let i = 0; i < (MAX_NESTING_DEPTH - 8) / 2; i++) valid = { a: valid };
  assert.equal((await post(valid)).status, 200, 'a body the schema accepts reaches the upstream');
  assert.equal((await post({ a: 7 })).status, 422, 'the schema is enforced');
});
