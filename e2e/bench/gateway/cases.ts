/**
 * The cases of the gateway benchmark, as the gateway serves them: keyless, token-authenticated
 * (one key in the Authorization header, the compiled chain on the fast path), JWT (RS256, one
 * warm key), protected (token, rate limit and quota on Redis, on a second gateway), an
 * endpoint-feature mix (a version chosen by a header, a white list, a request header transform
 * and a URL rewrite on every request), a cache hit (a keyless API with caching, warmed so the
 * upstream is never called), and on an HTTPS listener mutual TLS and the token again. Here: the
 * gateway processes, the APIs, keys and policies of each case, what each case loads, and the
 * checks that every case answers as it should before anything is measured.
 */
import { execFileSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { waitFor } from '../../../lib/testing/wait.ts';
import { send } from '../../../gateway/testing/client.ts';
import { makeCert, type MadeCert } from '../../../gateway/testing/client-certs.ts';
import { root, type Load } from './drivers.ts';
import { cacheLog } from './nginx.ts';
import { start } from './processes.ts';

/** Worker processes of each gateway (`--workers`) and of the nginx reverse proxy. */
export const WORKERS = availableParallelism();
const SECRET = 'bench-secret';
/** The one key of the token-authenticated case, sent as `Authorization: <token>`. */
const TOKEN = 'bench-token-0123456789abcdef';
/** The key of the protected case: token, rate limit and quota, counted in Redis. */
const PROTECTED_TOKEN = 'bench-protected-0123456789abcdef';
/** Requests sent one by one to count Redis commands per protected request. */
export const COUNTED_REQUESTS = 1000;
/** The organisation of the mutual TLS API and of its client certificate. */
const MTLS_ORG = 'bench';
/**
 * The endpoint-feature mix: the request header that chooses the version, and the header every
 * request carries for the header transform to delete.
 */
const MIX_HEADERS = { 'x-api-version': 'v1', 'x-drop': 'drop-me' } as const;
/**
 * The one path of the endpoint-feature mix's checks (rewritten to `/catalog/items/check`): the
 * upstream answers it with what it saw in `X-Seen` (the path, `x-bench`, `x-drop`); every loaded
 * request gets the plain answer of `location /`.
 */
const MIX_CHECK = '/mix/items/check';

/** The ports of a run. */
export interface Ports {
  upstream: number;
  nginx: number;
  gateway: number;
  floor: number;
  pump: number;
  redis: number;
  protected: number;
  tls: number;
}

/** What the cases' set-up made that their loads and checks need. */
export interface Made {
  /** The server certificate of the HTTPS listener. */
  server: { certFile: string; keyFile: string };
  /** The client certificate of the mTLS case, and its files. */
  client: MadeCert;
  clientFiles: { cert: string; key: string };
  /** The RS256 token of the JWT case. */
  jwtToken: string;
}

/** The management API header of the bench gateways. */
export const auth = { 'x-svc-authorization': SECRET };

/** Starts `node gateway/main.ts` on `port` with the bench's settings and waits until it is ready. */
export async function startGatewayProcess(port: number, storeArgs: string[], label: string): Promise<void> {
  start(
    process.execPath,
    [
      join(root, 'gateway', 'main.ts'),
      ...['--secret', SECRET, '--host', '127.0.0.1', '--port', String(port), ...storeArgs],
      ...['--workers', String(WORKERS), '--log-level', 'warn'],
    ],
    label,
  );
  await waitFor(
    `the ${label}`,
    async () => ((await send({ port, path: '/ready' })).status === 200 ? true : undefined),
    // Generous: --workers on a loaded machine took over 20 s to be ready.
    60_000,
  );
}

/** A self-signed server certificate for 127.0.0.1 (EC P-256), made with openssl in `dir`. */
export function serverCert(dir: string): { certFile: string; keyFile: string } {
  const certFile = join(dir, 'server.crt');
  const keyFile = join(dir, 'server.key');
  execFileSync(
    'openssl',
    [
      ...['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'],
      ...['-keyout', keyFile, '-out', certFile, '-days', '1', '-subj', '/CN=localhost'],
      ...['-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'],
    ],
    { stdio: 'ignore' },
  );
  return { certFile, keyFile };
}

/** GET over HTTPS on 127.0.0.1, presenting `client` (PEM) when given: the status and the body. */
function httpsGet(
  port: number,
  path: string,
  opts: { headers?: Record<string, string>; client?: { cert: string; key: string } } = {},
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        agent: false,
        rejectUnauthorized: false,
        ...(opts.headers === undefined ? {} : { headers: opts.headers }),
        ...opts.client,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') });
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/**
 * The cases of the first gateway (listening on `ports.gateway`, with an HTTPS listener on
 * `ports.tls`): every API, policy, key and certificate, then a reload.
 */
export async function addCases(ports: Ports, dir: string, server: Made['server']): Promise<Made> {
  const gatewayPort = ports.gateway;
  const upstream = ports.upstream;
  const tlsPort = ports.tls;
  const post = async (path: string, body: unknown): Promise<unknown> => {
    const r = await send({
      port: gatewayPort,
      method: 'POST',
      path,
      headers: auth,
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    if (r.status !== 200) throw new Error(`POST ${path} failed: ${r.status} ${r.text}`);
    return r.json;
  };
  const api = {
    api_id: 'bench',
    name: 'bench',
    use_keyless: true,
    proxy: { listen_path: '/', target_url: `http://127.0.0.1:${upstream}` },
  };
  const added = await send({
    port: gatewayPort,
    method: 'POST',
    path: '/svc/apis',
    headers: auth,
    body: JSON.stringify(api),
  });
  if (added.status !== 200) throw new Error(`adding the API failed: ${added.text}`);
  const keyed = {
    api_id: 'bench-token',
    name: 'bench-token',
    use_keyless: false,
    proxy: { listen_path: '/token/', strip_listen_path: true, target_url: `http://127.0.0.1:${upstream}` },
  };
  const addedKeyed = await send({
    port: gatewayPort,
    method: 'POST',
    path: '/svc/apis',
    headers: auth,
    body: JSON.stringify(keyed),
  });
  if (addedKeyed.status !== 200) throw new Error(`adding the keyed API failed: ${addedKeyed.text}`);
  const upstreamUrl = `http://127.0.0.1:${upstream}`;
  const https = { protocol: 'https', listen_port: tlsPort };
  // The token API again, on the HTTPS listener: the like-for-like reference of mTLS.
  await post('/svc/apis', {
    ...keyed,
    ...https,
    api_id: 'bench-token-tls',
    name: 'bench-token-tls',
    proxy: { listen_path: '/token-tls/', strip_listen_path: true, target_url: upstreamUrl },
  });
  // JWT: RS256 with a PEM public key, one token for the whole run (a warm key).
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const rsaPem = rsa.publicKey.export({ type: 'spki', format: 'pem' }).toString();
  await post('/svc/policies', {
    id: 'bench-jwt',
    name: 'bench-jwt',
    state: 'active',
    access_rights: { 'bench-jwt': { api_id: 'bench-jwt', versions: ['Default'] } },
  });
  await post('/svc/apis', {
    api_id: 'bench-jwt',
    name: 'bench-jwt',
    use_keyless: false,
    enable_jwt: true,
    jwt_signing_method: 'rsa',
    jwt_source: Buffer.from(rsaPem).toString('base64'),
    jwt_default_policies: ['bench-jwt'],
    proxy: { listen_path: '/jwt/', strip_listen_path: true, target_url: upstreamUrl },
  });
  const jwtToken = await new SignJWT({ sub: 'bench-user' })
    .setProtectedHeader({ alg: 'RS256' })
    .sign(rsa.privateKey);
  // Static mutual TLS: one client certificate, uploaded, the API's only allowed one.
  const client = await makeCert('bench-client');
  const clientFiles = { cert: join(dir, 'client.crt'), key: join(dir, 'client.key') };
  writeFileSync(clientFiles.cert, client.cert);
  writeFileSync(clientFiles.key, client.key);
  const uploaded = (await post(`/svc/certs?org_id=${MTLS_ORG}`, client.cert)) as { id?: string };
  if (uploaded.id === undefined)
    throw new Error(`uploading the client certificate returned no ID: ${JSON.stringify(uploaded)}`);
  await post('/svc/apis', {
    ...https,
    api_id: 'bench-mtls',
    name: 'bench-mtls',
    org_id: MTLS_ORG,
    use_keyless: true,
    use_mutual_tls_auth: true,
    client_certificates: [uploaded.id],
    proxy: { listen_path: '/mtls/', strip_listen_path: true, target_url: upstreamUrl },
  });
  // The endpoint-feature mix: the version by a header; in it, on /items/{id}, a white list
  // entry, a request header transform and a URL rewrite, so every loaded request runs all four.
  const items = '/items/{id}';
  await post('/svc/apis', {
    api_id: 'bench-mix',
    name: 'bench-mix',
    use_keyless: true,
    proxy: { listen_path: '/mix/', strip_listen_path: true, target_url: upstreamUrl },
    definition: { location: 'header', key: 'x-api-version' },
    version_data: {
      not_versioned: false,
      default_version: '',
      versions: {
        v1: {
          name: 'v1',
          use_extended_paths: true,
          extended_paths: {
            white_list: [{ path: items, method_actions: { GET: { action: 'no_action' } } }],
            transform_headers: [
              { path: items, method: 'GET', add_headers: { 'x-bench': '1' }, delete_headers: ['x-drop'] },
            ],
            url_rewrites: [
              {
                path: items,
                method: 'GET',
                match_pattern: '/items/(\\w+)',
                rewrite_to: '/catalog/items/$1',
              },
            ],
          },
        },
        v2: { name: 'v2', use_extended_paths: true, extended_paths: { white_list: [{ path: '/other' }] } },
      },
    },
  });
  // The cache hit: every GET cached for longer than the run (the upstream's /cache/ is logged).
  await post('/svc/apis', {
    api_id: 'bench-cache',
    name: 'bench-cache',
    use_keyless: true,
    proxy: { listen_path: '/cache/', target_url: upstreamUrl },
    cache_options: {
      enable_cache: true,
      cache_all_safe_requests: true,
      cache_timeout: 3600,
      cache_response_codes: [200],
    },
  });
  const key = await send({
    port: gatewayPort,
    method: 'POST',
    path: `/svc/keys/${TOKEN}`,
    headers: auth,
    body: JSON.stringify({
      org_id: '',
      access_rights: {
        'bench-token': { api_id: 'bench-token', versions: ['Default'] },
        'bench-token-tls': { api_id: 'bench-token-tls', versions: ['Default'] },
      },
    }),
  });
  if (key.status !== 200) throw new Error(`adding the key failed: ${key.text}`);
  const reloaded = await send({ port: gatewayPort, path: '/svc/reload', headers: auth });
  if (reloaded.status !== 200) throw new Error(`reload failed: ${reloaded.text}`);
  return { server, client, clientFiles, jwtToken };
}

/** The protected case on the second gateway (Redis store): its API and key, then a reload. */
export async function addProtected(ports: Pick<Ports, 'protected' | 'upstream'>): Promise<void> {
  const protectedPort = ports.protected;
  const upstream = ports.upstream;
  const protectedApi = {
    api_id: 'bench-protected',
    name: 'bench-protected',
    use_keyless: false,
    proxy: {
      listen_path: '/protected/',
      strip_listen_path: true,
      target_url: `http://127.0.0.1:${upstream}`,
    },
  };
  for (const [path, body] of [
    ['/svc/apis', protectedApi],
    [
      `/svc/keys/${PROTECTED_TOKEN}`,
      {
        rate: 1_000_000_000,
        per: 60,
        quota_max: 1_000_000_000,
        quota_renewal_rate: 86_400,
        access_rights: { 'bench-protected': { api_id: 'bench-protected', versions: ['Default'] } },
      },
    ],
  ] as const) {
    const r = await send({
      port: protectedPort,
      method: 'POST',
      path,
      headers: auth,
      body: JSON.stringify(body),
    });
    if (r.status !== 200) throw new Error(`${path} failed: ${r.text}`);
  }
  const reloadedRedis = await send({ port: protectedPort, path: '/svc/reload/group', headers: auth });
  if (reloadedRedis.status !== 200) throw new Error(`reload failed: ${reloadedRedis.text}`);
}

/**
 * The protected case on a redis-server of its own (`ports.redis`): Redis started and answering,
 * a second gateway (`ports.protected`) storing in it, and the protected API ({@link addProtected}).
 */
export async function startProtectedOnRedis(
  ports: Pick<Ports, 'protected' | 'upstream' | 'redis'>,
): Promise<void> {
  start(
    'redis-server',
    ['--port', String(ports.redis), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    'redis',
  );
  await waitFor('redis', () => {
    try {
      return execFileSync('redis-cli', ['-p', String(ports.redis), 'ping'], { encoding: 'utf8' }).trim() ===
        'PONG'
        ? true
        : undefined;
    } catch {
      return undefined;
    }
  });
  await startGatewayProcess(
    ports.protected,
    ['--store', `redis://127.0.0.1:${ports.redis}`],
    'gateway (redis)',
  );
  await addProtected(ports);
}

/**
 * Redis commands per protected request, one request at a time (after the session caches are
 * warm): `INFO stats` before and after COUNTED_REQUESTS requests.
 */
export async function redisCommandsPerRequest(ports: Ports): Promise<number> {
  const protectedPort = ports.protected;
  const redisPort = ports.redis;
  const commands = (): number => {
    const info = execFileSync('redis-cli', ['-p', String(redisPort), 'info', 'stats'], {
      encoding: 'utf8',
    });
    return Number(/total_commands_processed:(\d+)/.exec(info)?.[1] ?? NaN);
  };
  // Warm the session caches, then count the commands of COUNTED_REQUESTS requests.
  for (let i = 0; i < 20; i++) {
    await send({ port: protectedPort, path: '/protected/', headers: { Authorization: PROTECTED_TOKEN } });
  }
  const before = commands();
  for (let i = 0; i < COUNTED_REQUESTS; i++) {
    const r = await send({
      port: protectedPort,
      path: '/protected/',
      headers: { Authorization: PROTECTED_TOKEN },
    });
    if (r.status !== 200) throw new Error(`the protected API answers ${r.status}: ${r.text}`);
  }
  // One INFO call is itself a command.
  return (commands() - before - 1) / COUNTED_REQUESTS;
}

/** The protected case's load on a gateway at `port` (analytics.ts loads it on a third one). */
export function protectedLoad(port: number): Load {
  return { url: `http://127.0.0.1:${port}/protected/`, headers: { Authorization: PROTECTED_TOKEN } };
}

/** What each case loads (nginx, the Node floor and the byte pump as cases too). */
export type Loads = Record<
  | 'nginx'
  | 'gw'
  | 'token'
  | 'protected'
  | 'floor'
  | 'pump'
  | 'jwt'
  | 'tokenLoadgen'
  | 'tokenTls'
  | 'mtls'
  | 'mix'
  | 'cache',
  Load
>;

/** What each case loads. */
export function loadsOf(ports: Ports, made: Made): Loads {
  const { nginx: nginxPort, gateway: gatewayPort, protected: protectedPort, floor: floorPort } = ports;
  const { pump: pumpPort, tls: tlsPort } = ports;
  const { server, clientFiles, jwtToken } = made;
  const tlsBase = `https://127.0.0.1:${tlsPort}`;
  const loads: Loads = {
    nginx: { url: `http://127.0.0.1:${nginxPort}/` },
    gw: { url: `http://127.0.0.1:${gatewayPort}/` },
    token: { url: `http://127.0.0.1:${gatewayPort}/token/`, headers: { Authorization: TOKEN } },
    protected: protectedLoad(protectedPort),
    floor: { url: `http://127.0.0.1:${floorPort}/` },
    pump: { url: `http://127.0.0.1:${pumpPort}/` },
    jwt: { url: `http://127.0.0.1:${gatewayPort}/jwt/`, headers: { Authorization: `Bearer ${jwtToken}` } },
    tokenLoadgen: {
      url: `http://127.0.0.1:${gatewayPort}/token/`,
      headers: { Authorization: TOKEN },
      via: 'loadgen',
    },
    tokenTls: {
      url: `${tlsBase}/token-tls/`,
      headers: { Authorization: TOKEN },
      via: 'loadgen',
      tls: { ca: server.certFile },
    },
    mtls: {
      url: `${tlsBase}/mtls/`,
      via: 'loadgen',
      tls: { ca: server.certFile, ...clientFiles },
    },
    mix: { url: `http://127.0.0.1:${gatewayPort}/mix/items/42`, headers: MIX_HEADERS },
    cache: { url: `http://127.0.0.1:${gatewayPort}/cache/` },
  };
  return loads;
}

/**
 * Checks that every case answers as it should (proxied, refused without its credential, the
 * mix rewritten and transformed), then warms the cache case until every worker answers from its
 * cache. Returns how to count the cache case's upstream calls from then on.
 */
export async function checkCases(loads: Loads, ports: Ports, made: Made, dir: string): Promise<() => number> {
  const { gateway: gatewayPort, tls: tlsPort } = ports;
  const { client } = made;
  for (const load of Object.values(loads)) {
    const { port, pathname, protocol } = new URL(load.url);
    const r =
      protocol === 'https:'
        ? await httpsGet(Number(port), pathname, {
            headers: { ...load.headers },
            ...(load.tls?.cert === undefined ? {} : { client: { cert: client.cert, key: client.key } }),
          })
        : await send({ port: Number(port), path: pathname, headers: { ...load.headers } });
    if (r.status !== 200 || !r.text.includes('from the upstream'))
      throw new Error(`${load.url} does not proxy: ${r.status} ${r.text}`);
  }
  const refused = await send({ port: gatewayPort, path: '/token/' });
  if (refused.status !== 401) throw new Error(`the keyed API answers ${refused.status} without the key`);
  const noJwt = await send({
    port: gatewayPort,
    path: '/jwt/',
    headers: { Authorization: 'Bearer x.y.z' },
  });
  if (noJwt.status !== 403) throw new Error(`the JWT API answers ${noJwt.status} to a bad token`);
  const noCert = await httpsGet(tlsPort, '/mtls/');
  if (noCert.status !== 401) throw new Error(`the mTLS API answers ${noCert.status} without a certificate`);
  // The mix: the upstream sees the rewritten path, the added header and not the deleted one.
  const seen = await send({ port: gatewayPort, path: MIX_CHECK, headers: { ...MIX_HEADERS } });
  if (seen.status !== 200 || seen.headers['x-seen'] !== '/catalog/items/check|1|')
    throw new Error(
      `the mix API does not rewrite and transform: ${seen.status} x-seen ${String(seen.headers['x-seen'])}`,
    );
  for (const [what, path, headers] of [
    ['a path outside the white list', '/mix/orders', MIX_HEADERS],
    ['a request without the version header', '/mix/items/42', {}],
    ['the other version', '/mix/items/42', { ...MIX_HEADERS, 'x-api-version': 'v2' }],
  ] as const) {
    const r = await send({ port: gatewayPort, path, headers: { ...headers } });
    if (r.status !== 403) throw new Error(`the mix API answers ${r.status} to ${what}: ${r.text}`);
  }
  // The cache: fresh connections take the workers in turn; warm until each answers a hit.
  let hits = 0;
  for (let i = 0; hits < 2 * WORKERS; i++) {
    if (i >= 50 * WORKERS) throw new Error(`the cache API answers no hits (${hits} in a row)`);
    const r = await send({ port: gatewayPort, path: '/cache/', fresh: true });
    if (r.status !== 200 || !r.text.includes('from the upstream'))
      throw new Error(`the cache API does not proxy: ${r.status} ${r.text}`);
    hits = r.headers['x-svc-cached-response'] === '1' ? hits + 1 : 0;
  }
  const upstreamCalls = (): number =>
    existsSync(cacheLog(dir)) ? readFileSync(cacheLog(dir), 'utf8').split('\n').length - 1 : 0;
  return upstreamCalls;
}
