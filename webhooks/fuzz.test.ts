/**
 * Drives random and mutated manifests through the defaulters and validators, seeded and bounded,
 * and checks what must hold whatever the input:
 *
 * - nothing throws;
 * - an admitted object is valid against the full schema of its kind, and against independent
 *   oracles of the main rules (rate/per, quotas, IPs, regular expressions, listen paths);
 * - defaulting is idempotent, keeps schema-valid objects valid, and its JSON patch applied to
 *   the input gives the defaulted object;
 * - every refusal has a path ("" for the object itself), a known type and a message;
 * - the AdmissionReview decoder either decodes or says why.
 *
 * A failure prints the seed and iteration, so it can be replayed by changing SEED.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { API_VERSION } from '../schemas/common.ts';
import { asArray, asNumber, asObject } from './access.ts';

/** Reads a dotted path (the oracles' own reader: they share no code with the rules they check). */
function at(root: unknown, path: string): unknown {
  let cur: unknown = root;
  for (const part of path.split('.')) cur = asObject(cur)?.[part];
  return cur;
}
import { FieldErrorType } from './field-error.ts';
import type { Verdict } from './field-error.ts';
import { handlers } from './handlers.ts';
import { diff } from './json-patch.ts';
import { memoryLookups } from './memory-lookups.ts';
import { checkDocumentText } from './oas-document.ts';
import { buildGraphqlSchema } from '../schemas/rules/graphql-schema.ts';
import { schemaErrors } from './schema.ts';
import { BadReviewError, decodeReview } from './server.ts';
import {
  apiDefinition,
  applyPatch,
  configMap,
  oasApi,
  oasDocument,
  operatorContext,
  secret,
  securityPolicy,
  streamsApi,
  streamsDocument,
} from './testing.ts';
import { isPlainObject } from '../lib/plain-object.ts';

const SEED = 0x5eed_2026;
const ITERATIONS_PER_KIND = 400;
const DOCUMENT_ITERATIONS = 300;

/** mulberry32: small, fast, good enough to spread mutations. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

class Fuzzer {
  readonly rand: () => number;
  constructor(seed: number) {
    this.rand = prng(seed);
  }
  int(n: number): number {
    return Math.floor(this.rand() * n);
  }
  pick<T>(items: readonly T[]): T {
    const item = items[this.int(items.length)];
    if (item === undefined) throw new Error('pick from an empty list');
    return item;
  }
  /** Values that tend to break things. */
  scalar(): Json {
    return this.pick<() => Json>([
      () => this.pick([-2, -1, 0, 1, 2, 60, 65536, 2 ** 31, -(2 ** 53), 1.5, Number.MAX_SAFE_INTEGER]),
      () => this.pick([true, false]),
      () => null,
      () =>
        this.pick([
          '',
          ' ',
          '/',
          'orders',
          '/orders/',
          '*',
          '10.0.0.*',
          '10.0.0.0/8',
          '::1/129',
          '(',
          '[a-',
          '(.*)',
          'http://',
          'http://x',
          'ftp://x',
          '{{ .object.id',
          'http://x/{{ .a }}',
          'httpbin.org',
          'tcp://x:1',
          'ws://x',
          '/p/./',
          '//p/',
          '/p%2F',
          '/P/',
          '/hello',
          '/svc/x',
          'tcp',
          'h2c',
          'https',
          'ApiDefinition',
          'SvcOasApiDefinition',
          'active',
          'pro',
          'ce',
          '\u0000',
          'ü'.repeat(300),
          'a'.repeat(254),
        ]),
    ])();
  }
  value(depth = 0): Json {
    if (depth > 2 || this.rand() < 0.6) return this.scalar();
    if (this.rand() < 0.5) return Array.from({ length: this.int(3) }, () => this.value(depth + 1));
    return Object.fromEntries(Array.from({ length: this.int(3) }, () => [this.key(), this.value(depth + 1)]));
  }
  key(): string {
    return this.pick([
      'name',
      'namespace',
      'kind',
      'rate',
      'per',
      'url',
      'enabled',
      'x',
      'listen_path',
      'versions',
    ]);
  }
  /** Paths of every node of a value, for choosing where to mutate. */
  paths(v: Json, at: (string | number)[] = [], out: (string | number)[][] = []): (string | number)[][] {
    out.push(at);
    if (Array.isArray(v)) v.forEach((x, i) => this.paths(x, [...at, i], out));
    else if (v !== null && typeof v === 'object')
      for (const [k, x] of Object.entries(v)) this.paths(x, [...at, k], out);
    return out;
  }
  /**
   * One random change under `under` (a top-level key, or anywhere): replace, delete, add a key,
   * duplicate an element, or retype.
   */
  mutate(doc: Json, under?: string): Json {
    const copy = structuredClone(doc);
    const candidates = this.paths(copy).filter(
      (p) => p.length > 0 && (under === undefined || p[0] === under),
    );
    if (candidates.length === 0) return copy;
    const target = this.pick(candidates);
    const last = target[target.length - 1];
    if (last === undefined) return copy;
    let parent: Json = copy;
    for (const step of target.slice(0, -1)) parent = (parent as Record<string | number, Json>)[step] ?? null;
    if (parent === null || typeof parent !== 'object') return copy;
    const container = parent as Record<string | number, Json>;
    switch (this.int(5)) {
      case 0:
        container[last] = this.value();
        break;
      case 1:
        if (Array.isArray(parent)) parent.splice(Number(last), 1);
        else Reflect.deleteProperty(container, last);
        break;
      case 2: {
        const child = container[last];
        if (isPlainObject(child)) child[this.key()] = this.value();
        else container[last] = this.value();
        break;
      }
      case 3: {
        const child = container[last];
        if (Array.isArray(child) && child.length > 0) child.push(structuredClone(child[0] ?? null));
        else container[last] = [this.value()];
        break;
      }
      default:
        container[last] = this.scalar();
    }
    return copy;
  }
}

/** Manifests the examples hold, by kind, plus builders' objects. */
function seeds(): Map<string, Json[]> {
  const byKind = new Map<string, Json[]>();
  const add = (o: unknown): void => {
    const kind = String(at(o, 'kind'));
    byKind.set(kind, [...(byKind.get(kind) ?? []), o as Json]);
  };
  const dir = path.join(import.meta.dirname, '..', 'examples');
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.yaml'))) {
    for (const doc of parseAllDocuments(readFileSync(path.join(dir, file), 'utf8'))) {
      const obj: unknown = doc.toJS();
      if (at(obj, 'apiVersion') === API_VERSION) add(obj);
    }
  }
  add(
    apiDefinition('gql', {
      proxy: { listen_path: '/gql/' },
      graphql: {
        enabled: true,
        execution_mode: 'executionEngine',
        schema: 'type Query { a: String }',
        type_field_configurations: [
          {
            type_name: 'Query',
            field_name: 'a',
            data_source: {
              kind: 'HTTPJSONDataSource',
              data_source_config: { url: 'http://a/{{ .object.id }}' },
            },
          },
        ],
      },
    }),
  );
  add(
    apiDefinition('ips', {
      use_keyless: false,
      use_standard_auth: true,
      enable_ip_whitelisting: true,
      allowed_ips: ['10.0.0.0/8', '::1'],
    }),
  );
  add(
    securityPolicy('limits', {
      rate: 10,
      per: 1,
      throttle_interval: 1,
      throttle_retry_limit: 2,
      quota_max: 100,
      quota_renewal_rate: 3600,
      access_rights_array: [
        { name: 'httpbin', limit: { rate: 5, per: 1 }, allowed_urls: [{ url: '/a(.*)', methods: ['GET'] }] },
      ],
    }),
  );
  add(oasApi('pets', 'pets-oas'));
  add(streamsApi('events', 'events-streams'));
  add(
    operatorContext('ctx', {
      env: { mode: 'ce', url: 'http://gw:8080' },
      secretRef: { name: 'payments-gateway-conf' },
    }),
  );
  return byKind;
}

const cluster = [
  configMap('pets-oas', { 'oas.yaml': oasDocument('/pets/') }),
  configMap('petstore-oas', { 'oas.yaml': oasDocument() }),
  configMap('events-streams', { 'streams.yaml': streamsDocument() }),
  secret('payments-gateway-conf', ['SVC_AUTH', 'SVC_ORG']),
  apiDefinition('httpbin'),
];
const lookups = memoryLookups(cluster);

// --- independent oracles: what an admitted object must satisfy -------------------------------

function limitsHold(limits: unknown): boolean {
  const v = (k: string): number => asNumber(at(limits, k)) ?? -1;
  const rateOk = (v('rate') < 0 && v('per') < 0) || (v('rate') > 0 && v('per') > 0);
  const throttleOk = !(
    v('throttle_interval') > 0 !== v('throttle_retry_limit') > 0 &&
    Math.min(v('throttle_interval'), v('throttle_retry_limit')) < 0
  );
  const quotaOk = v('quota_max') === -1 || (v('quota_max') > 0 && v('quota_renewal_rate') > 0);
  return rateOk && throttleOk && quotaOk;
}

const ipOk = (s: unknown): boolean => {
  if (typeof s !== 'string') return false;
  const [ip = '', prefix, extra] = s.split('/');
  const version = net.isIP(ip);
  return (
    version !== 0 &&
    extra === undefined &&
    (prefix === undefined || (/^\d+$/.test(prefix) && Number(prefix) <= (version === 4 ? 32 : 128)))
  );
};

const compiles = (s: unknown): boolean => {
  try {
    new RegExp(String(s));
    return true;
  } catch {
    return false;
  }
};

const oracles: Record<string, (obj: unknown) => string | undefined> = {
  SecurityPolicy: (obj) => {
    if (!limitsHold(at(obj, 'spec'))) return 'policy limits inconsistent';
    for (const r of asArray(at(obj, 'spec.access_rights_array'))) {
      const limit = asObject(r)?.limit;
      if (limit !== undefined && !limitsHold(limit)) return 'per-API limits inconsistent';
      for (const u of asArray(asObject(r)?.allowed_urls))
        if (!compiles(at(u, 'url'))) return 'allowed_urls regex';
    }
    return undefined;
  },
  ApiDefinition: (obj) => {
    const spec = asObject(at(obj, 'spec')) ?? {};
    for (const ip of [...asArray(spec.allowed_ips), ...asArray(spec.blacklisted_ips)])
      if (!ipOk(ip)) return `bad IP ${String(ip)}`;
    if (
      spec.use_keyless === true &&
      [
        spec.use_standard_auth,
        spec.use_basic_auth,
        spec.enable_jwt,
        spec.use_mutual_tls_auth,
        spec.enable_signature_checking,
      ].includes(true)
    )
      return 'keyless with auth';
    if (
      // Answered by the gateway itself (its data sources, or the subgraph APIs a supergraph plans over).
      !(
        at(spec, 'graphql.enabled') === true &&
        ['executionEngine', 'supergraph'].includes(String(at(spec, 'graphql.execution_mode')))
      ) &&
      !(typeof at(spec, 'proxy.target_url') === 'string' && at(spec, 'proxy.target_url') !== '')
    )
      return 'no target_url';
    const sdl = at(spec, 'graphql.schema');
    if (typeof sdl === 'string' && sdl !== '' && typeof buildGraphqlSchema(sdl) === 'string')
      return 'graphql schema';
    const lp = String(at(spec, 'proxy.listen_path'));
    if (!lp.startsWith('/')) return 'listen_path';
    if (/\/\/|%|\/\.\.?(\/|$)/.test(lp)) return 'listen_path not canonical';
    const onGatewayPort = !((asNumber(spec.listen_port) ?? 0) > 0);
    if (onGatewayPort && /^\/(svc|hello|ready)(\/|$)/i.test(lp)) return 'listen_path reserved';
    if (!['', 'http', 'https', undefined].includes(spec.protocol as string | undefined)) return 'protocol';
    const target = at(spec, 'proxy.target_url');
    if (typeof target === 'string' && target !== '') {
      const url = URL.parse(/^[a-z][a-z0-9+.-]*:\/\//i.test(target) ? target : `http://${target}`);
      if (url === null || !['http:', 'https:'].includes(url.protocol)) return `target ${target}`;
    }
    for (const on of ['use_mutual_tls_auth']) if (at(spec, on) === true) return `${on} is not supported`;
    if (
      spec.enable_jwt === true &&
      (typeof spec.jwt_signing_method !== 'string' ||
        typeof spec.jwt_source !== 'string' ||
        spec.jwt_source === '')
    )
      return 'JWT without its signing method and source';
    return undefined;
  },
  OperatorContext: (obj) => {
    const url = at(obj, 'spec.env.url');
    if (url !== undefined && !(typeof url === 'string' && URL.canParse(url))) return 'bad url';
    return undefined;
  },
};

function checkVerdict(v: Verdict, where: string): void {
  for (const e of v.errors) {
    assert.ok(Object.values(FieldErrorType).includes(e.type), `${where}: unknown type ${e.type}`);
    // The path is "" only for the object itself (not an object at all).
    assert.ok(e.message !== '', `${where}: empty message ${JSON.stringify(e)}`);
    assert.ok(typeof e.path === 'string', `${where}: no path ${JSON.stringify(e)}`);
  }
  for (const w of v.warnings) assert.ok(w !== '', `${where}: empty warning`);
}

test('mutated and random manifests through the defaulters and validators', async () => {
  const fuzz = new Fuzzer(SEED);
  const byKind = seeds();
  let admitted = 0;
  let refused = 0;
  for (const handler of handlers.filter((h) => h.group !== '')) {
    const pool = byKind.get(handler.kind) ?? [];
    assert.ok(pool.length > 0, `no seed manifest for ${handler.kind}`);
    for (let i = 0; i < ITERATIONS_PER_KIND; i++) {
      const where = `seed ${SEED}, ${handler.kind} #${i}`;
      let input: Json = fuzz.pick(pool);
      const rounds = fuzz.int(4);
      // metadata comes from the API server, well-formed; the manifest's spec is what users write.
      for (let r = 0; r < rounds; r++) input = fuzz.mutate(input, 'spec');
      if (fuzz.rand() < 0.05) input = fuzz.value();

      const defaulted = handler.default?.(input) ?? input;
      assert.deepEqual(
        handler.default?.(defaulted) ?? defaulted,
        defaulted,
        `${where}: defaulting is not idempotent`,
      );
      assert.deepEqual(
        applyPatch(input, diff(input, defaulted)),
        defaulted,
        `${where}: the patch does not give the defaults`,
      );
      if (schemaErrors(handler.kind, input).length === 0) {
        assert.deepEqual(
          schemaErrors(handler.kind, defaulted),
          [],
          `${where}: defaulting broke a valid object`,
        );
      }

      const verdict = await handler.validate(defaulted, undefined, lookups);
      checkVerdict(verdict, where);
      if (verdict.errors.length === 0) {
        admitted++;
        assert.deepEqual(
          schemaErrors(handler.kind, defaulted),
          [],
          `${where}: admitted a schema-invalid object ${JSON.stringify(defaulted)}`,
        );
        const broken = oracles[handler.kind]?.(defaulted);
        assert.equal(
          broken,
          undefined,
          `${where}: admitted an object that breaks a rule (${broken ?? ''}): ${JSON.stringify(defaulted)}`,
        );
      } else {
        refused++;
      }
      if (handler.validateDelete !== undefined)
        checkVerdict(await handler.validateDelete(defaulted, lookups), where);
    }
  }
  // The mutations must exercise both outcomes, or the test proves little.
  assert.ok(admitted > 100 && refused > 100, `admitted ${admitted}, refused ${refused}`);
});

test('mutated OAS and streams documents', () => {
  const fuzz = new Fuzzer(SEED + 1);
  const docs = [oasDocument(), streamsDocument()].map((t) => parseAllDocuments(t)[0]?.toJS() as Json);
  for (let i = 0; i < DOCUMENT_ITERATIONS; i++) {
    const streams = i % 2 === 1;
    let doc: Json = docs[i % 2] ?? null;
    for (let r = 0, n = 1 + fuzz.int(3); r < n; r++) doc = fuzz.mutate(doc);
    const text = fuzz.rand() < 0.5 ? JSON.stringify(doc) : JSON.stringify(doc).slice(0, fuzz.int(200));
    const result = checkDocumentText(text, 'k', streams);
    checkVerdict(result, `seed ${SEED + 1}, document #${i}`);
    if (result.errors.length === 0) {
      assert.ok(result.doc !== undefined, 'an admitted document parsed');
      assert.match(String(result.doc.openapi), /^3\./);
      assert.ok(result.doc['x-svc-api-gateway'] !== undefined);
      if (streams) assert.ok(result.doc['x-svc-streaming'] !== undefined);
    }
  }
});

test('random AdmissionReview bodies are decoded or refused with a reason', () => {
  const fuzz = new Fuzzer(SEED + 2);
  const valid: Json = {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: 'u',
      kind: { group: 'svc.svc.io', version: 'v1alpha1', kind: 'ApiDefinition' },
      operation: 'CREATE',
      object: {},
    },
  };
  for (let i = 0; i < 500; i++) {
    const body = fuzz.rand() < 0.1 ? fuzz.value() : fuzz.mutate(valid);
    try {
      const req = decodeReview(body);
      assert.equal(typeof req.uid, 'string');
      assert.ok(['CREATE', 'UPDATE', 'DELETE', 'CONNECT'].includes(req.operation));
    } catch (err) {
      assert.ok(err instanceof BadReviewError, `seed ${SEED + 2} #${i}: ${String(err)}`);
    }
  }
});
