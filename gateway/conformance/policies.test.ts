/**
 * Policies applied to keys, as a table (GATEWAY-BEHAVIOUR §5): where sessions
 * (sessions/apply-policies.ts), authentication and access rights meet. A key's rights come from
 * its policies (two united), a policy's partition without `acl` keeps the key's rights and grants
 * none, a `draft` policy disables its keys, a `deny` one is never applied. Each row is a request
 * in, and the status and the `error`. Runs against the files and Redis stores, with the fast path
 * on and off.
 */
import assert from 'node:assert/strict';
import { keyed, type GatewayClient } from '../testing/harness.ts';
import { accessTo, addPolicies, describeAuthTable, type AuthRow } from '../testing/auth-rows.ts';
import { provision } from '../testing/tables.ts';

const rows: AuthRow[] = [
  {
    name: 'policy: rights from the policy',
    path: '/pol/x',
    headers: { authorization: 'key-pol' },
    status: 200,
  },
  {
    name: 'policy: rights of two policies united',
    path: '/tok/x',
    headers: { authorization: 'key-pol' },
    status: 200,
  },
  {
    name: 'policy: an acl-less partition keeps the key rights',
    path: '/tok/x',
    headers: { authorization: 'key-part' },
    status: 200,
  },
  {
    name: 'policy: ...and grants none of its own',
    path: '/pol/x',
    headers: { authorization: 'key-part' },
    status: 403,
    error: 'Access to this API has been disallowed',
  },
  {
    name: 'policy: draft disables its keys',
    path: '/pol/x',
    headers: { authorization: 'key-draft' },
    status: 403,
    error: 'Key is inactive, please renew',
  },
  {
    name: 'policy: deny is never applied',
    path: '/pol/x',
    headers: { authorization: 'key-deny' },
    status: 403,
    error: 'Access to this API has been disallowed',
  },
];

/** The policies (pol-draft and pol-deny active while their keys are created), APIs and keys. */
async function setUp(gw: GatewayClient, upstream: string): Promise<void> {
  await addPolicies(gw, [
    { id: 'pol-a', name: 'A', state: 'active', active: true, access_rights: accessTo('pol') },
    { id: 'pol-b', name: 'B', state: 'active', active: true, access_rights: accessTo('tok') },
    {
      id: 'pol-part',
      name: 'quota only',
      state: 'active',
      partitions: { quota: true },
      quota_max: -1,
      access_rights: accessTo('pol'),
    },
    { id: 'pol-draft', name: 'to be draft', state: 'active', access_rights: accessTo('pol') },
    { id: 'pol-deny', name: 'to be deny', state: 'active', access_rights: accessTo('pol') },
  ]);
  await provision(gw, [keyed('tok', '/tok/', upstream), keyed('pol', '/pol/', upstream)], {
    'key-pol': { apply_policies: ['pol-a', 'pol-b'] },
    'key-part': { apply_policies: ['pol-part'], access_rights: accessTo('tok') },
    'key-draft': { apply_policies: ['pol-draft'] },
    'key-deny': { apply_policies: ['pol-deny'] },
  });
  for (const [id, state] of [
    ['pol-draft', 'draft'],
    ['pol-deny', 'deny'],
  ] as const) {
    const res = await gw.admin('PUT', `/svc/policies/${id}`, {
      id,
      name: id,
      state,
      access_rights: accessTo('pol'),
    });
    assert.equal(res.status, 200, res.text);
  }
  await gw.reload();
}

describeAuthTable('policies', setUp, rows);
