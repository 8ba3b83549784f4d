/**
 * Documents nested too deep (schemas/rules/nesting.ts), against a real dashboard listener: an OAS
 * document whose request body schema nests 5,000 levels deep is refused with a 400 naming the
 * limit, not an internal error; so is every other body (classic definition, policy, key,
 * organisation); a document nested exactly to the limit is stored and read back.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_NESTING_DEPTH } from '../../schemas/rules/nesting.ts';
import { deepOasDocument, withDeep } from '../../schemas/testing.ts';
import { startOrgDashboard, type TestDashboard } from '../testing/dashboard.ts';

const ORG = 'nesting-org';

const refusal = (under: string): Record<string, unknown> => ({
  Status: 'Error',
  Message: `Request malformed: the body is nested more than 128 levels deep (under ${under}): at most 128 objects and lists may be nested in one another`,
  Meta: null,
});

let d: TestDashboard;
let admin: string;
let close: () => Promise<void>;

before(async () => {
  ({ d, admin, close } = await startOrgDashboard(ORG));
});
after(() => close());

describe('bodies nested too deep: 400 naming the limit', () => {
  const cases: { name: string; path: string; body: () => string; under: string; admin?: true }[] = [
    {
      name: 'an OAS document 5,000 levels deep',
      path: '/api/apis/oas',
      body: () => deepOasDocument(5000),
      under: 'paths',
    },
    {
      name: 'an OAS document one level past the limit',
      path: '/api/apis/oas',
      body: () => deepOasDocument(MAX_NESTING_DEPTH + 2),
      under: 'paths',
    },
    {
      name: 'a classic definition',
      path: '/api/apis',
      body: () => withDeep({}, 'api_definition', 5000),
      under: 'api_definition',
    },
    {
      name: 'a policy',
      path: '/api/portal/policies',
      body: () => withDeep({ name: 'p', rate: 1, per: 1 }, 'meta_data', 5000),
      under: 'meta_data',
    },
    {
      name: 'a key',
      path: '/api/keys',
      body: () => withDeep({ rate: 1, per: 1 }, 'meta_data', 5000),
      under: 'meta_data',
    },
    {
      name: 'an organisation',
      path: '/admin/organisations',
      body: () => withDeep({ owner_name: 'deep' }, 'meta', 5000),
      under: 'meta',
      admin: true,
    },
  ];
  for (const c of cases) {
    test(c.name, async () => {
      const r = await d.call('POST', c.path, {
        auth: c.admin === true ? { admin: true } : admin,
        body: c.body(),
      });
      assert.equal(r.status, 400, r.text);
      assert.deepEqual(r.body, refusal(c.under));
    });
  }
  test('nothing was stored', async () => {
    const apis = await d.call('GET', '/api/apis', { auth: admin });
    assert.deepEqual(apis.body.apis, []);
  });
});

test('a document nested exactly to the limit is stored and read back', async () => {
  const text = deepOasDocument(MAX_NESTING_DEPTH);
  const created = await d.call('POST', '/api/apis/oas', { auth: admin, body: text });
  assert.equal(created.status, 200, created.text);
  const got = await d.call('GET', `/api/apis/oas/deep${String(MAX_NESTING_DEPTH)}`, { auth: admin });
  assert.equal(got.status, 200);
  assert.deepEqual(got.body.paths, (JSON.parse(text) as Record<string, unknown>).paths);
});
