/**
 * IDs a client chooses, against a real dashboard listener (schemas/rules/ids.ts): an ID that its
 * own URL cannot name (`.`, `..`, `/`, control characters, too long, and for APIs, policies and
 * organisations anything outside letters, digits and `. _ ~ -`) is refused when written, with a
 * 400 naming the field; every ID that is accepted can be read, updated and deleted through its
 * URL, escaped as encodeURIComponent does.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { badObjectIds, oasDocument } from '../../schemas/testing.ts';
import { startOrgDashboard, type Res, type TestDashboard } from '../testing/dashboard.ts';

const STREAMS = 'application/vnd.svc.streams.oas';
const ORG = 'ids-org';

/**
 * Basic-auth user names refused. A name is in the path, where `.` and `..` are resolved before
 * routing (the rule refuses them all the same: schemas/rules/ids.test.ts).
 */
const badUserNames: [name: string, user: string, says: RegExp][] = [
  ['a slash', 'ab/cd', /username: Invalid value: \/ would split/],
  ['a newline', 'bob\nx', /username: Invalid value: control characters/],
  ['white space only', '   ', /username: Invalid value: HTTP drops leading and trailing spaces/],
  ['a leading space', ' bob', /username: Invalid value: HTTP drops/],
  ['too long', 'u'.repeat(1025), /username: Too long: 1025 characters, more than 1024/],
];

const goodObjectIds = ['a.b_c~d-1', '.lead', 'trail.', 'x'.repeat(255)];
const goodUserNames = [
  'ops@example.com',
  'John Smith',
  'domain\\user',
  '100%',
  'a?b#c',
  'b+64=',
  'jörg',
  '...',
];

let d: TestDashboard;
let admin: string;
let close: () => Promise<void>;
let seq = 0;

before(async () => {
  ({ d, admin, close } = await startOrgDashboard(ORG));
});
after(() => close());

const classic = (id: string): Record<string, unknown> => ({
  api_definition: {
    api_id: id,
    name: `c${String(++seq)}`,
    proxy: { listen_path: `/c${String(seq)}/`, target_url: 'http://upstream.test' },
  },
});
const oas = (id: string): Record<string, unknown> =>
  oasDocument({ id, name: `o${String(++seq)}`, listenPath: `/o${String(seq)}/` });
const streams = (id: string): Record<string, unknown> => ({
  ...oas(id),
  'x-svc-streaming': {
    streams: { s1: { input: { http_server: { path: '/in' } }, output: { http_server: { path: '/out' } } } },
  },
});
const session = { rate: 10, per: 60, quota_max: -1, basic_auth_data: { password: 'pw-1' } };

/** Each kind whose ID the client chooses, how to write one, and what lists it. */
const writers: { kind: string; field: string; write: (id: string) => Promise<Res>; list: string }[] = [
  {
    kind: 'classic API',
    field: 'api_id',
    write: (id) => d.call('POST', '/api/apis', { auth: admin, body: classic(id) }),
    list: '/api/apis',
  },
  {
    kind: 'OAS API',
    field: 'x-svc-api-gateway.info.id',
    write: (id) => d.call('POST', '/api/apis/oas', { auth: admin, body: oas(id) }),
    list: '/api/apis',
  },
  {
    kind: 'streams API',
    field: 'x-svc-api-gateway.info.id',
    write: (id) =>
      d.call('POST', '/api/apis/streams', { auth: admin, body: streams(id), contentType: STREAMS }),
    list: '/api/apis/streams',
  },
  {
    kind: 'policy',
    field: 'id',
    write: (id) =>
      d.call('POST', '/api/portal/policies', { auth: admin, body: { id, name: 'p', rate: 10, per: 60 } }),
    list: '/api/portal/policies',
  },
  {
    kind: 'organisation',
    field: 'id',
    write: (id) =>
      d.call('POST', '/admin/organisations', { auth: { admin: true }, body: { id, owner_name: 'o' } }),
    list: '/admin/organisations',
  },
];

const listed = async (path: string): Promise<string> =>
  (await d.call('GET', path, { auth: path.startsWith('/admin') ? { admin: true } : admin })).text;

describe('IDs the dashboard refuses, with 400 naming the field', () => {
  for (const w of writers) {
    for (const [name, id, says] of badObjectIds) {
      test(`${w.kind}: ${name}`, async () => {
        const before = await listed(w.list);
        const r = await w.write(id);
        assert.equal(r.status, 400, r.text);
        assert.equal(r.body.Status, 'Error');
        assert.ok(String(r.body.Message).includes(`${w.field}: `), r.text);
        assert.match(String(r.body.Message), says);
        assert.equal(await listed(w.list), before, 'nothing was stored');
      });
    }
  }
  for (const [name, user, says] of badUserNames) {
    test(`basic-auth user: ${name}`, async () => {
      const path = `/api/apis/keys/basic/${encodeURIComponent(user)}`;
      const r = await d.call('POST', path, { auth: admin, body: session });
      assert.equal(r.status, 400, r.text);
      assert.match(String(r.body.Message), /^Validation of Key failed\. Reason: username: /);
      assert.match(String(r.body.Message), says);
      assert.equal(
        (await d.call('GET', `/api/keys/${encodeURIComponent(user)}`, { auth: admin })).status,
        404,
      );
    });
  }
});

describe('IDs the rule accepts still round-trip through their URL', () => {
  for (const id of goodObjectIds) {
    const label = JSON.stringify(id.slice(0, 20));
    test(`classic API ${label}`, async () => {
      const path = `/api/apis/${encodeURIComponent(id)}`;
      const body = classic(id);
      assert.equal((await d.call('POST', '/api/apis', { auth: admin, body })).body.Meta, id);
      const got = await d.call('GET', path, { auth: admin });
      assert.equal((got.body.api_definition as { api_id: string }).api_id, id);
      assert.equal((await d.call('PUT', path, { auth: admin, body })).status, 200);
      assert.equal((await d.call('DELETE', path, { auth: admin })).status, 200);
      assert.equal((await d.call('GET', path, { auth: admin })).status, 404);
    });
    test(`OAS API ${label}`, async () => {
      const path = `/api/apis/oas/${encodeURIComponent(id)}`;
      const body = oas(id);
      assert.equal((await d.call('POST', '/api/apis/oas', { auth: admin, body })).body.Meta, id);
      assert.equal((await d.call('GET', path, { auth: admin })).status, 200);
      assert.equal((await d.call('PUT', path, { auth: admin, body })).status, 200);
      assert.equal((await d.call('DELETE', path, { auth: admin })).status, 200);
      assert.equal((await d.call('GET', path, { auth: admin })).status, 404);
    });
    test(`streams API ${label}`, async () => {
      const path = `/api/apis/streams/${encodeURIComponent(id)}`;
      const body = streams(id);
      const opts = { auth: admin, body, contentType: STREAMS };
      assert.equal((await d.call('POST', '/api/apis/streams', opts)).body.ID, id);
      assert.equal((await d.call('GET', path, { auth: admin })).status, 200);
      assert.equal((await d.call('PUT', path, opts)).status, 200);
      assert.equal((await d.call('DELETE', path, { auth: admin })).status, 200);
      assert.equal((await d.call('GET', path, { auth: admin })).status, 404);
    });
    test(`policy ${label}`, async () => {
      const path = `/api/portal/policies/${encodeURIComponent(id)}`;
      const body = { id, name: 'p', rate: 10, per: 60 };
      assert.equal((await d.call('POST', '/api/portal/policies', { auth: admin, body })).body.Message, id);
      assert.equal((await d.call('GET', path, { auth: admin })).body.id, id);
      assert.equal((await d.call('PUT', path, { auth: admin, body: { ...body, rate: 20 } })).status, 200);
      assert.equal((await d.call('DELETE', path, { auth: admin })).status, 200);
      assert.equal((await d.call('GET', path, { auth: admin })).status, 404);
    });
    test(`organisation ${label}`, async () => {
      const path = `/admin/organisations/${encodeURIComponent(id)}`;
      const auth = { admin: true } as const;
      const created = await d.call('POST', '/admin/organisations', { auth, body: { id, owner_name: 'o' } });
      assert.equal(created.body.Meta, id, created.text);
      assert.equal((await d.call('GET', path, { auth })).body.id, id);
      assert.equal((await d.call('PUT', path, { auth, body: { owner_name: 'o2' } })).status, 200);
      assert.equal((await d.call('DELETE', path, { auth })).status, 200);
      assert.equal((await d.call('GET', path, { auth })).status, 404);
    });
  }
  for (const user of goodUserNames) {
    test(`basic-auth user ${JSON.stringify(user)}`, async () => {
      const basic = `/api/apis/keys/basic/${encodeURIComponent(user)}`;
      const key = `/api/keys/${encodeURIComponent(user)}`;
      const created = await d.call('POST', basic, { auth: admin, body: session });
      assert.equal(created.status, 200, created.text);
      assert.equal((await d.call('PUT', basic, { auth: admin, body: { ...session, rate: 20 } })).status, 200);
      assert.equal((await d.call('GET', key, { auth: admin })).body.key_id, user);
      assert.equal((await d.call('DELETE', key, { auth: admin })).status, 200);
      assert.equal((await d.call('GET', key, { auth: admin })).status, 404);
    });
  }
});
