/**
 * What a cluster admin does first, against the cluster KUBECONFIG points at (`make e2e-cluster`,
 * the node suite e2e/node/cluster-suites.node.ts), with svc installed by the charts:
 *
 * - every manifest of examples/ applied as it is, but in a namespace of the suite's own (the
 *   examples' `default` replaced by it, in metadata and in their `<service>.default.svc:<port>`
 *   upstreams), their upstreams running in pods behind those Services, and each API served through
 *   the gateway's Service to a client pod: keyless, token-protected with a key of the example's
 *   policy, OAS, GraphQL proxied and executed, and the streams API (its messages transformed by
 *   Bento in the gateway's pod, delivered as server-sent events);
 * - an admission error: the API server refuses an invalid ApiDefinition through the webhook
 *   Service, and the message names the field.
 *
 * The gateway must run with streaming on (`SVC_GW_STREAMING_ENABLED=true` in its chart's
 * extraEnv), the second gateway release (E2E_GATEWAY2_NAMESPACE) must exist for the example
 * OperatorContext. The client pod runs `node -e` in E2E_NODE_IMAGE (see e2e/harness/world.ts).
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { environment } from '../../lib/config.ts';
import { waitFor } from '../../lib/testing/wait.ts';
import { nodeServiceManifest, RESTRICTED_YAML } from '../harness/node-service.ts';
import { startWorld, type World } from '../harness/world.ts';
import { admin, applyManifest, readyOf, root, waitForStatus } from '../operator/helpers.ts';

const env = environment();
const NODE_IMAGE = env.E2E_NODE_IMAGE ?? 'node:24-alpine';
const GATEWAY_NS = env.E2E_GATEWAY_NAMESPACE ?? 'svc-gateway';
const TIMEOUT = 240_000;
const KEY = 'e2e-examples-orders-key';

let w: World;
/** The suite's namespace, standing in for the examples' `default`. */
let NS: string;

before(async () => {
  w = await startWorld({ name: 'examples', namespaces: ['demo'], secrets: ['unused', 'unused'] });
  NS = w.ns('demo');
});

after(async () => {
  await w.stop();
});

/**
 * The examples' upstreams: one answers every request with what it received, as JSON, and
 * `x-upstream: <its Service's name>`; `/users/<id>` and `/users/<id>/posts` answer as the users
 * and posts services of the GraphQL data graph do.
 */
const UPSTREAM_SCRIPT = `const http = require('node:http');
const name = process.env.NAME;
http.createServer((req, res) => {
  let body = '';
  req.setEncoding('utf8');
  req.on('data', (c) => (body += c));
  req.on('end', () => {
    const url = new URL(req.url || '/', 'http://x');
    let m;
    let out;
    if ((m = /^\\/users\\/([^/]+)\\/posts$/.exec(url.pathname))) out = { items: [{ id: 'p-' + m[1], title: 'post of ' + m[1] }] };
    else if ((m = /^\\/users\\/([^/]+)$/.exec(url.pathname))) out = { id: m[1], name: 'user ' + m[1] };
    else out = { upstream: name, method: req.method, path: url.pathname, query: url.search, body };
    res.writeHead(200, { 'content-type': 'application/json', 'x-upstream': name });
    res.end(JSON.stringify(out));
  });
}).listen(Number(process.env.PORT));
process.on('SIGTERM', () => process.exit(0));
`;

/** A Deployment and Service `name` answering on `port` in the suite's namespace. */
function upstream(name: string, port: number): string {
  return nodeServiceManifest({
    name,
    namespace: NS,
    container: 'upstream',
    image: NODE_IMAGE,
    script: UPSTREAM_SCRIPT,
    env: { NAME: name, PORT: String(port) },
    containerPort: port,
    servicePort: port,
  });
}

/** A request the client pod makes through the gateway's Service, retried until `want` answers. */
interface ClientRequest {
  name: string;
  path: string;
  want: number;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /** A server-sent events consumer of `path`; once it is open, `post` is sent. */
  sse?: { post: { path: string; body: string } };
}

/** What the client pod saw for a request. */
interface ClientResult {
  status: number;
  upstream?: string | null;
  body: string;
  error?: string;
}

/** The client pod's program: the requests in order, each retried until it gets its status. */
const CLIENT_SCRIPT = `const base = process.env.GATEWAY;
const reqs = JSON.parse(process.env.REQUESTS);
const deadline = Date.now() + Number(process.env.DEADLINE_MS);
async function sse(r) {
  const ac = new AbortController();
  const timer = setTimeout(() => ac.abort(), 20000);
  try {
    const res = await fetch(base + r.path, { signal: ac.signal, headers: { accept: 'text/event-stream' } });
    if (res.status !== 200) return { status: res.status, body: await res.text() };
    const reader = res.body.getReader();
    const posted = await fetch(base + r.sse.post.path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: r.sse.post.body });
    if (posted.status !== 200) return { status: posted.status, body: 'POST ' + r.sse.post.path + ': ' + (await posted.text()) };
    const dec = new TextDecoder();
    let text = '';
    for (;;) {
      const m = /^data: ?(.*)$/m.exec(text);
      if (m) return { status: 200, body: m[1] };
      const { value, done } = await reader.read();
      if (done) return { status: 0, body: 'the stream ended: ' + text };
      text += dec.decode(value, { stream: true });
    }
  } finally {
    clearTimeout(timer);
    ac.abort();
  }
}
async function once(r) {
  if (r.sse) return sse(r);
  const res = await fetch(base + r.path, { method: r.method || 'GET', headers: r.headers || {}, body: r.body });
  return { status: res.status, upstream: res.headers.get('x-upstream'), body: await res.text() };
}
(async () => {
  const out = {};
  for (const r of reqs) {
    let last;
    for (;;) {
      try { last = await once(r); } catch (e) { last = { status: 0, body: '', error: String(e) }; }
      if (last.status === r.want || Date.now() > deadline) break;
      await new Promise((res) => setTimeout(res, 1000));
    }
    out[r.name] = last;
  }
  console.log(JSON.stringify(out));
})();
`;

/** Runs the client pod `name` with `requests` and returns what it saw, by request name. */
async function fromClientPod(name: string, requests: ClientRequest[]): Promise<Record<string, ClientResult>> {
  await applyManifest(
    w,
    `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: ${NS}}
spec:
  restartPolicy: Never
  securityContext: {runAsNonRoot: true, runAsUser: 65532}
  containers:
    - name: client
      image: ${NODE_IMAGE}
      imagePullPolicy: IfNotPresent
      command: [node, -e, ${JSON.stringify(CLIENT_SCRIPT)}]
      env:
        - {name: GATEWAY, value: "http://svc-gateway.${GATEWAY_NS}.svc:8080"}
        - {name: REQUESTS, value: ${JSON.stringify(JSON.stringify(requests))}}
        - {name: DEADLINE_MS, value: "${String(TIMEOUT - 60_000)}"}
      securityContext: ${RESTRICTED_YAML}
`,
  );
  const phase = await waitFor(
    `the client pod ${name} to finish`,
    async () => {
      const r = await w.kubectl(['get', 'pod', name, '-n', NS, '-o', 'jsonpath={.status.phase}']);
      return r.stdout === 'Succeeded' || r.stdout === 'Failed' ? r.stdout : undefined;
    },
    TIMEOUT,
    1000,
  );
  const logs = (await w.kubectl(['logs', name, '-n', NS])).stdout;
  assert.equal(phase, 'Succeeded', logs);
  return JSON.parse(logs) as Record<string, ClientResult>;
}

/** The examples as a user in namespace NS would write them: `default` replaced by NS. */
async function examples(): Promise<string> {
  const dir = join(root, 'examples');
  const files = (await readdir(dir)).filter((f) => f.endsWith('.yaml')).sort();
  assert.ok(files.length > 0, 'no examples');
  const texts = await Promise.all(files.map((f) => readFile(join(dir, f), 'utf8')));
  return texts
    .map((t) =>
      t
        .replaceAll(/^(\s*)namespace: default$/gm, `$1namespace: ${NS}`)
        .replaceAll('.default.svc', `.${NS}.svc`),
    )
    .join('\n---\n');
}

test(
  'examples/ applied in a namespace of its own: every API served through the gateway Service to a client pod',
  { timeout: 2 * TIMEOUT },
  async () => {
    const gw2 = await w.secondGateway();
    // The upstreams the examples name, as `<service>.<namespace>.svc:<port>`.
    await applyManifest(
      w,
      [
        upstream('httpbin', 8000),
        upstream('orders', 8080),
        upstream('petstore', 8080),
        upstream('people-graphql', 4000),
        upstream('users', 8080),
        upstream('posts', 8080),
      ].join('---\n'),
    );
    // The example OperatorContext names a gateway in a namespace `payments` with a placeholder
    // secret: here, the second gateway with its own.
    const manifests = (await examples())
      .replaceAll('http://svc-gateway.payments.svc:8080', gw2.operatorUrl)
      .replaceAll('replace-with-the-gateway-secret', gw2.secret);
    const applied = await w.kubectl(['apply', '-f', '-'], { input: manifests, allowFailure: true });
    assert.equal(applied.code, 0, applied.stderr);
    for (const d of ['httpbin', 'orders', 'petstore', 'people-graphql', 'users', 'posts']) {
      await w.kubectl(['rollout', 'status', '-n', NS, `deployment/${d}`, '--timeout=180s']);
    }

    const ready = (st: Record<string, unknown>): boolean => readyOf(st)?.status === 'True';
    for (const [kind, name] of [
      ['apidefinition', 'httpbin'],
      ['apidefinition', 'orders'],
      ['apidefinition', 'people'],
      ['apidefinition', 'people-graph'],
      ['svcoasapidefinition', 'petstore'],
      ['svcstreamsapidefinition', 'events'],
      ['securitypolicy', 'orders-standard'],
      ['operatorcontext', 'payments-gateway'],
    ] as const) {
      await waitForStatus(w, { kind, ns: NS, name }, 'Ready', ready, TIMEOUT);
    }
    const policy = await waitForStatus(
      w,
      { kind: 'securitypolicy', ns: NS, name: 'orders-standard' },
      'pol_id',
      (st) => typeof st.pol_id === 'string',
    );
    const key = await admin(w.gateway, 'POST', `/svc/keys/${KEY}`, {
      org_id: w.org,
      apply_policies: [policy.pol_id],
    });
    assert.equal(key.status, 200, JSON.stringify(key.body));

    const graphql = (query: string): string => JSON.stringify({ query });
    const got = await fromClientPod('client', [
      { name: 'httpbin', path: '/httpbin/anything?x=1', want: 200 },
      { name: 'orders without a key', path: '/orders/list', want: 401 },
      { name: 'orders with a key', path: '/orders/list', want: 200, headers: { authorization: KEY } },
      {
        name: 'orders POST outside the plan',
        path: '/orders/list',
        want: 403,
        method: 'POST',
        headers: { authorization: KEY },
        body: '{}',
      },
      { name: 'petstore without a key', path: '/petstore/pets', want: 401 },
      {
        name: 'people (proxyOnly)',
        path: '/people/',
        want: 200,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: graphql('{ hello(name: "svc") }'),
      },
      {
        name: 'people, an invalid query',
        path: '/people/',
        want: 400,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: graphql('{ nope }'),
      },
      {
        name: 'people-graph (executionEngine)',
        path: '/people-graph/',
        want: 200,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: graphql('{ user(id: "7") { name posts { title } } }'),
      },
      {
        name: 'events',
        path: '/events/out',
        want: 200,
        sse: { post: { path: '/events/in', body: JSON.stringify({ text: 'hello from a pod' }) } },
      },
    ]);
    const r = (name: string): ClientResult => {
      const v = got[name];
      assert.ok(v !== undefined, `no result for ${name}`);
      return v;
    };
    const json = (name: string): Record<string, unknown> =>
      JSON.parse(r(name).body) as Record<string, unknown>;

    assert.equal(r('httpbin').status, 200, JSON.stringify(r('httpbin')));
    assert.equal(r('httpbin').upstream, 'httpbin');
    assert.deepEqual([json('httpbin').path, json('httpbin').query], ['/anything', '?x=1']);

    assert.equal(r('orders without a key').status, 401, r('orders without a key').body);
    assert.equal(r('orders with a key').status, 200, r('orders with a key').body);
    assert.equal(r('orders with a key').upstream, 'orders');
    assert.equal(json('orders with a key').path, '/list');
    assert.equal(r('orders POST outside the plan').status, 403, r('orders POST outside the plan').body);

    assert.equal(r('petstore without a key').status, 401, r('petstore without a key').body);

    assert.equal(r('people (proxyOnly)').status, 200, r('people (proxyOnly)').body);
    assert.equal(r('people (proxyOnly)').upstream, 'people-graphql');
    assert.equal(r('people, an invalid query').status, 400, r('people, an invalid query').body);
    assert.match(r('people, an invalid query').body, /nope/);

    assert.equal(r('people-graph (executionEngine)').status, 200, r('people-graph (executionEngine)').body);
    assert.deepEqual(json('people-graph (executionEngine)'), {
      data: { user: { name: 'user 7', posts: [{ title: 'post of 7' }] } },
    });

    assert.equal(r('events').status, 200, JSON.stringify(r('events')));
    const event = json('events');
    assert.equal(event.text, 'HELLO FROM A POD', 'transformed by the example mapping');
    assert.equal(typeof event.received_at, 'string');
  },
);

test('an invalid ApiDefinition: the API server refuses it through the webhook Service, naming the field', async () => {
  const r = await w.kubectl(['apply', '-f', '-'], {
    input: `apiVersion: svc.svc.io/v1alpha1
kind: ApiDefinition
metadata: {name: no-upstream, namespace: ${NS}}
spec:
  name: no-upstream
  use_keyless: true
  proxy: {listen_path: /no-upstream/}
`,
    allowFailure: true,
  });
  assert.notEqual(r.code, 0, 'refused');
  // kubectl prints the webhook's causes: the field, then the webhook's own message.
  assert.match(
    r.stderr,
    /The ApiDefinition "no-upstream" is invalid: spec\.proxy\.target_url: Required value: set the upstream address, such as http:\/\/<service>\.<namespace>\.svc:<port>/,
  );
  const gone = await w.kubectl(['get', 'apidefinition', 'no-upstream', '-n', NS], { allowFailure: true });
  assert.notEqual(gone.code, 0, 'nothing was stored');
});
