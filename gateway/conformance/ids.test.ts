/**
 * IDs a client chooses, against a real listener (schemas/rules/ids.ts): an ID that its own URL
 * cannot name (`.`, `..`, `/`, control characters, too long, and for APIs, policies and
 * organisations anything outside letters, digits and `. _ ~ -`) is refused when written, with a
 * 400 naming the field; every ID that is accepted can be read, updated and deleted through its
 * URL, escaped as encodeURIComponent does.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { badObjectIds, oasDocument } from '../../schemas/testing.ts';
import { send } from '../testing/client.ts';
import { startEcho, type Echo } from '../testing/echo.ts';
import { keyed, keyless, SECRET, startGateway, type InProcessGateway } from '../testing/harness.ts';
import { stopAll } from '../../lib/testing/teardown.ts';

/** The URL form of an ID: escaped as clients do, and dots as `%2E` so nothing resolves them first. */
const inPath = (id: string): string => encodeURIComponent(id).replaceAll('.', '%2E');
const target = 'http://127.0.0.1:9';

/**
 * Custom key values (and basic-auth user names) refused, and what the message says. A key is
 * named in the path, where `.` and `..` are resolved before routing: `POST /svc/keys/%2E%2E` is
 * `POST /svc/` (the rule refuses them all the same: schemas/rules/ids.test.ts).
 */
const badKeyIds: [name: string, key: string, says: RegExp][] = [
  ['a slash (base64 with /)', 'ab/cd==', /keyID: Invalid value: \/ would split/],
  ['a newline', 'key\nx', /keyID: Invalid value: control characters/],
  ['a tab', 'a\tb', /keyID: Invalid value: control characters/],
  ['white space only', '   ', /keyID: Invalid value: HTTP drops leading and trailing spaces/],
  ['a trailing space', 'key ', /keyID: Invalid value: HTTP drops/],
  ['too long', 'k'.repeat(1025), /keyID: Too long: 1025 characters, more than 1024/],
];

/** IDs that stay valid, with the characters the rule allows. */
// (255 characters pass the rule, but the files store takes at most 240 bytes per file name.)
const goodObjectIds = ['a.b_c~d-1', '.lead', 'trail.', 'x'.repeat(200)];
/** Key values users bring from elsewhere. */
const goodKeyIds = [
  'dGVzdCtrZXk+PQ+x==',
  'ops@example.com',
  'org:name',
  '100%',
  'a?b#c',
  'domain\\user',
  'John Smith',
  'jörg',
  '...',
];

let echo: Echo;
let gw: InProcessGateway;
before(async () => {
  echo = await startEcho('echo');
  gw = await startGateway();
  await gw.addApi(keyed('k', '/k/', echo.url));
  await gw.reload();
});
after(async () => {
  await stopAll(gw, echo);
});

/** A management call on an exact path (no URL parsing on the way). */
async function call(
  method: string,
  path: string,
  body?: unknown,
): Promise<{
  status: number;
  json: { status?: string; message?: string; key?: string; action?: string };
  text: string;
}> {
  const res = await send({
    port: gw.adminPort,
    method,
    path,
    headers: { 'x-svc-authorization': SECRET },
    ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }),
  });
  return { status: res.status, json: res.json ?? {}, text: res.text };
}

/** Each kind whose ID is chosen in the body or the path, and how to write one with the ID `id`. */
const writers: {
  kind: string;
  field: string;
  /** The ID is in the path, where `.` and `..` (`%2E`) are resolved before routing (RFC 3986). */
  inPath?: true;
  write: (id: string) => Promise<Awaited<ReturnType<typeof call>>>;
}[] = [
  {
    kind: 'classic API (POST)',
    field: 'api_id',
    write: (id) => call('POST', '/svc/apis', keyless(id, '/c/', target)),
  },
  {
    kind: 'classic API (PUT)',
    field: 'api_id',
    inPath: true,
    write: (id) => call('PUT', `/svc/apis/${inPath(id)}`, keyless(id, '/c/', target)),
  },
  {
    kind: 'OAS API',
    field: 'x-svc-api-gateway.info.id',
    write: (id) => call('POST', '/svc/apis/oas', oasDocument({ id, listenPath: '/o/', target })),
  },
  {
    kind: 'policy (POST)',
    field: 'id',
    write: (id) => call('POST', '/svc/policies', { id, name: 'p', rate: 10, per: 60 }),
  },
  {
    kind: 'policy (PUT)',
    field: 'id',
    inPath: true,
    write: (id) => call('PUT', `/svc/policies/${inPath(id)}`, { name: 'p', rate: 10, per: 60 }),
  },
  {
    kind: 'organisation session',
    field: 'orgID',
    inPath: true,
    write: (id) => call('POST', `/svc/org/keys/${inPath(id)}`, {}),
  },
  {
    kind: 'certificate organisation',
    field: 'org_id',
    write: (id) => call('POST', `/svc/certs?org_id=${encodeURIComponent(id)}`, 'not read'),
  },
];

describe('IDs the gateway refuses, with 400 naming the field', () => {
  for (const w of writers) {
    for (const [name, id, says] of badObjectIds) {
      if (w.inPath === true && (id === '.' || id === '..')) continue;
      test(`${w.kind}: ${name}`, async () => {
        const res = await call('GET', '/svc/apis');
        const before = res.text;
        const r = await w.write(id);
        assert.equal(r.status, 400, r.text);
        assert.equal(r.json.status, 'error');
        assert.ok(r.json.message?.includes(`${w.field}: `), r.text);
        assert.match(r.json.message ?? '', says);
        assert.equal((await call('GET', '/svc/apis')).text, before, 'nothing was stored');
      });
    }
  }
  for (const [name, key, says] of badKeyIds) {
    test(`custom key: ${name}`, async () => {
      const r = await call('POST', `/svc/keys/${inPath(key)}`, { access_rights: { k: { api_id: 'k' } } });
      assert.equal(r.status, 400, r.text);
      assert.match(r.json.message ?? '', /^Validation of Key failed\. Reason: keyID: /);
      assert.match(r.json.message ?? '', says);
      if (key.trim().length > 2)
        assert.ok(!r.text.includes(JSON.stringify(key).slice(1, -1)), 'the key is not echoed');
      assert.equal((await call('GET', `/svc/keys/${inPath(key)}`)).status, 404);
    });
  }
  test('a generated key whose organisation has a /', async () => {
    const r = await call('POST', '/svc/keys', { org_id: 'a/b', access_rights: { k: { api_id: 'k' } } });
    assert.equal(r.status, 400, r.text);
    assert.match(r.json.message ?? '', /org_id: Invalid value: \/ would split the URL/);
  });
});

describe('IDs the rule accepts still round-trip through their URL', () => {
  for (const id of goodObjectIds) {
    test(`classic API ${JSON.stringify(id.slice(0, 20))}`, async () => {
      const path = `/svc/apis/${encodeURIComponent(id)}`;
      assert.deepEqual(
        (await call('POST', '/svc/apis', keyless(id, `/r${String(id.length)}/`, target))).json,
        {
          key: id,
          status: 'ok',
          action: 'added',
        },
      );
      assert.equal(((await call('GET', path)).json as { api_id?: string }).api_id, id);
      assert.equal(
        (await call('PUT', path, keyless(id, `/r${String(id.length)}/`, target))).json.action,
        'modified',
      );
      assert.equal((await call('DELETE', path)).json.action, 'deleted');
      assert.equal((await call('GET', path)).status, 404);
    });
    test(`OAS API ${JSON.stringify(id.slice(0, 20))}`, async () => {
      const path = `/svc/apis/oas/${encodeURIComponent(id)}`;
      const doc = oasDocument({ id, listenPath: `/o${String(id.length)}/`, target });
      assert.equal((await call('POST', '/svc/apis/oas', doc)).json.key, id);
      assert.equal((await call('GET', path)).status, 200);
      assert.equal((await call('PUT', path, doc)).json.action, 'modified');
      assert.equal((await call('DELETE', path)).json.action, 'deleted');
      assert.equal((await call('GET', path)).status, 404);
    });
    test(`policy ${JSON.stringify(id.slice(0, 20))}`, async () => {
      const path = `/svc/policies/${encodeURIComponent(id)}`;
      assert.equal((await call('POST', '/svc/policies', { id, name: 'p', rate: 10, per: 60 })).json.key, id);
      assert.equal(((await call('GET', path)).json as { id?: string }).id, id);
      assert.equal((await call('PUT', path, { name: 'p', rate: 20, per: 60 })).json.action, 'modified');
      assert.equal((await call('DELETE', path)).json.action, 'deleted');
      assert.equal((await call('GET', path)).status, 404);
    });
    test(`organisation session ${JSON.stringify(id.slice(0, 20))}`, async () => {
      const path = `/svc/org/keys/${encodeURIComponent(id)}`;
      assert.equal((await call('POST', path, { quota_max: -1 })).json.action, 'added');
      assert.equal((await call('GET', path)).status, 200);
      assert.equal((await call('PUT', path, { quota_max: -1 })).json.action, 'modified');
      assert.equal((await call('DELETE', path)).json.action, 'deleted');
      assert.equal((await call('GET', path)).status, 404);
    });
  }
  for (const key of goodKeyIds) {
    test(`custom key ${JSON.stringify(key)}`, async () => {
      const path = `/svc/keys/${encodeURIComponent(key)}`;
      const body = { access_rights: { k: { api_id: 'k', versions: ['Default'] } } };
      assert.equal((await call('POST', path, body)).json.action, 'added');
      assert.equal((await call('GET', path)).status, 200);
      assert.equal((await call('PUT', path, body)).json.action, 'modified');
      if (!/[^\x20-\x7e]/.test(key)) {
        const proxied = await gw.request({ path: '/k/x', fresh: true, headers: { authorization: key } });
        assert.equal(proxied.status, 200, `${key} authenticates`);
      }
      assert.equal((await call('DELETE', path)).json.action, 'deleted');
      assert.equal((await call('GET', path)).status, 404);
    });
  }
});
