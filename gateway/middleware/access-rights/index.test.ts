/**
 * Access rights as a table (GATEWAY-BEHAVIOUR §2, §5): the API must be in the key's rights, its
 * version covered, and the method and path in the entry's allowed URLs (given here by a policy's
 * `acl` partition). Each row is a request in, and the status and the `error`. Runs against the
 * files and Redis stores, with the fast path on and off.
 */
import { keyed } from '../../testing/harness.ts';
import { accessTo, addPolicies, describeAuthTable, type AuthRow } from '../../testing/auth-rows.ts';
import { provision } from '../../testing/tables.ts';

const rows: AuthRow[] = [
  {
    name: 'access: API not in the key',
    path: '/tok/x',
    headers: { authorization: 'key-other' },
    status: 403,
    error: 'Access to this API has been disallowed',
  },
  {
    name: 'access: key without access rights',
    path: '/tok/x',
    headers: { authorization: 'key-empty' },
    status: 403,
    error: 'Access to this API has been disallowed',
  },
  {
    name: 'access: version not covered',
    path: '/tok/x',
    headers: { authorization: 'key-v2' },
    status: 403,
    error: 'Access to this API has been disallowed',
  },
  {
    name: 'access: allowed URL and method',
    path: '/urls/read/1',
    headers: { authorization: 'key-urls' },
    status: 200,
  },
  {
    name: 'access: allowed URL, other method',
    method: 'POST',
    path: '/urls/read/1',
    body: 'x',
    headers: { authorization: 'key-urls' },
    status: 403,
    error: 'Access to this resource has been disallowed',
  },
  {
    name: 'access: URL outside the list',
    path: '/urls/write/1',
    headers: { authorization: 'key-urls' },
    status: 403,
    error: 'Access to this resource has been disallowed',
  },
  {
    name: 'access: exact URL pattern',
    method: 'POST',
    path: '/urls/',
    body: 'x',
    headers: { authorization: 'key-urls' },
    status: 200,
  },
];

describeAuthTable(
  'access rights',
  async (gw, upstream) => {
    await addPolicies(gw, [
      {
        id: 'pol-urls',
        name: 'urls',
        partitions: { acl: true },
        access_rights: {
          urls: {
            api_id: 'urls',
            versions: ['Default'],
            allowed_urls: [
              { url: '/urls/read(.*)', methods: ['GET'] },
              { url: '/urls/$', methods: ['POST'] },
            ],
          },
        },
      },
    ]);
    await provision(
      gw,
      [keyed('tok', '/tok/', upstream), keyed('hdr', '/hdr/', upstream), keyed('urls', '/urls/', upstream)],
      {
        'key-other': { access_rights: accessTo('hdr') },
        'key-empty': {},
        'key-v2': { access_rights: { tok: { api_id: 'tok', versions: ['v2'] } } },
        'key-urls': { apply_policies: ['pol-urls'] },
      },
    );
  },
  rows,
);
