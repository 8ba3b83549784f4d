/**
 * The rules a streams document (`x-svc-streaming.streams` of an API) follows beyond Bento's own,
 * the ones that need no Bento process: stream names, the `http_server` fields and paths the
 * gateway serves, `portal_webhook` outputs, the seed's `rate_limit` and Kafka `topic` forms in
 * Bento's, and the plan the gateway runs (stream IDs, endpoints). What asks a Bento process (its
 * lint, building a stream, deleting one) is in lib/bento/streams.ts, which checks these first.
 */
import { createHash } from 'node:crypto';
import { takesBatches } from '../../lib/bento/batching.ts';
import { asPlainObject } from '../../lib/plain-object.ts';
import { parseDuration } from '../../lib/duration.ts';
import { EVENT_TYPE_RULE, isEventType, isHttpUrl } from './portal.ts';

/** The document path of the streams. */
export const STREAMS_PATH = 'x-svc-streaming.streams';

/** A stream name: used in the stream ID, so in URLs and metric labels. */
export const STREAM_NAME = /^[A-Za-z0-9_-]{1,64}$/;

/** Bento's default paths of an `http_server` input and output. */
const INPUT_DEFAULTS = { path: '/post', ws_path: '/post/ws', allowed_verbs: ['POST'] } as const;
const OUTPUT_DEFAULTS = {
  path: '/get',
  stream_path: '/get/stream',
  ws_path: '/get/ws',
  allowed_verbs: ['GET'],
} as const;

/** Fields of `http_server` the gateway owns: it serves the endpoints on its own port. */
const GATEWAY_OWNED = ['address', 'cert_file', 'key_file'] as const;

/** One HTTP endpoint of a stream, served by the gateway on `{listen_path}{path}`. */
export interface StreamEndpoint {
  /** Path under the listen path, as Bento serves it under `/<stream id>`. */
  path: string;
  /** `input` takes published messages, `output` delivers them. */
  role: 'input' | 'output';
  /** `http`: request and response; `ws`: a WebSocket upgrade. */
  kind: 'http' | 'ws';
  /** Methods allowed on an `http` endpoint (upper case). */
  verbs: readonly string[];
  /** An input whose publishes the gateway may pass to Bento as batches (lib/bento/batching.ts). */
  batches?: true;
}

/** One stream of an API, ready for Bento. */
export interface PlannedStream {
  /** Name in `x-svc-streaming.streams`. */
  name: string;
  /** Bento stream ID: `<api id>.<name>` (names have no dot, so the split is unambiguous). */
  id: string;
  /** The configuration as written (input, pipeline, output, ...). */
  config: Record<string, unknown>;
  endpoints: StreamEndpoint[];
  /** Its input takes batches (lib/bento/batching.ts). */
  batches: boolean;
}

/** The Bento stream ID of stream `name` of API `apiId`. */
export function streamId(apiId: string, name: string): string {
  return `${apiId}.${name}`;
}

/** `x-svc-streaming.streams` of a document, when it is an object. */
export function streamsOf(doc: unknown): Record<string, unknown> | undefined {
  return asPlainObject(asPlainObject(asPlainObject(doc)?.['x-svc-streaming'])?.streams);
}

/** Whether a stored API document has streams. */
export function hasStreams(doc: unknown): boolean {
  const s = streamsOf(doc);
  return s !== undefined && Object.keys(s).length > 0;
}

interface Found {
  role: 'input' | 'output';
  settings: Record<string, unknown>;
  path: string;
}

/** Every `http_server` of a connector, looking inside `broker`s (and their children). */
function httpServers(connector: unknown, role: 'input' | 'output', path: string, found: Found[]): void {
  const c = asPlainObject(connector);
  if (c === undefined) return;
  const hs = c.http_server;
  if (hs !== undefined) found.push({ role, settings: asPlainObject(hs) ?? {}, path: `${path}.http_server` });
  const list = (v: unknown, at: string): void => {
    if (Array.isArray(v))
      v.forEach((child, i) => {
        httpServers(child, role, `${at}[${i}]`, found);
      });
  };
  // Connectors that hold others: brokers, and switch, fallback, retry (outputs), sequence and
  // read_until (inputs).
  list(asPlainObject(c.broker)?.[role === 'input' ? 'inputs' : 'outputs'], `${path}.broker.${role}s`);
  if (role === 'output') {
    const cases = asPlainObject(c.switch)?.cases;
    if (Array.isArray(cases))
      cases.forEach((k, i) => {
        httpServers(asPlainObject(k)?.output, role, `${path}.switch.cases[${i}].output`, found);
      });
    list(c.fallback, `${path}.fallback`);
    httpServers(asPlainObject(c.retry)?.output, role, `${path}.retry.output`, found);
  } else {
    list(asPlainObject(c.sequence)?.inputs, `${path}.sequence.inputs`);
    httpServers(asPlainObject(c.read_until)?.input, role, `${path}.read_until.input`, found);
  }
}

/** `v` when it is a list of strings. */
export const stringList = (v: unknown): string[] | undefined =>
  Array.isArray(v) && v.every((x) => typeof x === 'string') ? v : undefined;

/** An endpoint of an `http_server`, and whether its path was written or is Bento's default. */
interface FoundEndpoint {
  endpoint: StreamEndpoint;
  written: boolean;
}

/** The endpoints of one `http_server`, with Bento's defaults. */
function endpointsOf(f: Found): FoundEndpoint[] {
  const d = f.role === 'input' ? INPUT_DEFAULTS : OUTPUT_DEFAULTS;
  const verbs = (stringList(f.settings.allowed_verbs) ?? [...d.allowed_verbs]).map((v) => v.toUpperCase());
  const out: FoundEndpoint[] = [];
  const add = (field: string, def: string, kind: 'http' | 'ws'): void => {
    const v = f.settings[field];
    const written = typeof v === 'string';
    const p = written ? v : def;
    if (p !== '')
      out.push({
        endpoint: { path: p, role: f.role, kind, verbs: kind === 'ws' ? ['GET'] : verbs },
        written,
      });
  };
  add('path', d.path, 'http');
  if (f.role === 'output') add('stream_path', OUTPUT_DEFAULTS.stream_path, 'http');
  add('ws_path', d.ws_path, 'ws');
  return out;
}

/** A problem with the streams of a document, at its path. */
export interface StreamProblem {
  path: string;
  message: string;
}

/**
 * The streams of `doc` for API `apiId`, and the problems that keep them from running on the
 * gateway (checked before Bento sees them): stream names, the `http_server` fields the gateway
 * owns, connectors the gateway does not provide yet, and two endpoints on one path. The paths of
 * all streams share the listen path, so a path two endpoints write is refused; a path one of them
 * takes from Bento's defaults (`/post/ws` of every input without `ws_path`) is served by the
 * endpoint that wrote it, else by the first that has it, and not by the others: two inputs each
 * on its own `path` (two streams, or the inputs of a broker) are not refused for a WebSocket path
 * neither asked for.
 */
export function planStreams(
  apiId: string,
  doc: unknown,
): { streams: PlannedStream[]; problems: StreamProblem[] } {
  const streams: PlannedStream[] = [];
  const problems: StreamProblem[] = [];
  const all = streamsOf(doc) ?? {};
  const claimed = new Map<string, string>();
  /** Each stream's endpoints, claimed once every written path is known. */
  const pending: {
    endpoints: StreamEndpoint[];
    found: { f: Found; e: FoundEndpoint }[];
    batches: boolean;
  }[] = [];
  for (const [name, raw] of Object.entries(all)) {
    const at = `${STREAMS_PATH}.${name}`;
    if (!STREAM_NAME.test(name)) {
      problems.push({
        path: at,
        message: `stream names are 1 to 64 letters, digits, _ or -: rename ${JSON.stringify(name)}`,
      });
      continue;
    }
    const config = asPlainObject(raw);
    if (config === undefined) {
      problems.push({ path: at, message: 'a stream is an object with input, pipeline and output' });
      continue;
    }
    portalWebhookProblems(config, at, problems);
    problems.push(...runnableStream(config, at, resourcePrefix(streamId(apiId, name))).problems);
    const found: Found[] = [];
    httpServers(config.input, 'input', `${at}.input`, found);
    httpServers(config.output, 'output', `${at}.output`, found);
    const endpoints: StreamEndpoint[] = [];
    const ownEndpoints: { f: Found; e: FoundEndpoint }[] = [];
    const batches = takesBatches(config);
    for (const f of found) {
      for (const k of GATEWAY_OWNED) {
        if (f.settings[k] !== undefined)
          problems.push({
            path: `${f.path}.${k}`,
            message: `the gateway serves http_server endpoints on its own port under the listen path: remove ${k}`,
          });
      }
      for (const e of endpointsOf(f)) {
        if (!e.endpoint.path.startsWith('/')) {
          problems.push({
            path: f.path,
            message: `${JSON.stringify(e.endpoint.path)}: a path starts with /`,
          });
          continue;
        }
        ownEndpoints.push({ f, e });
      }
    }
    pending.push({ endpoints, found: ownEndpoints, batches });
    streams.push({
      name,
      id: streamId(apiId, name),
      config,
      endpoints,
      batches,
    });
  }
  // Written paths first: a default never takes a path from an endpoint that wrote it.
  for (const written of [true, false]) {
    for (const p of pending) {
      for (const { f, e } of p.found) {
        if (e.written !== written) continue;
        const { endpoint } = e;
        const owner = claimed.get(endpoint.path);
        if (owner !== undefined) {
          if (written)
            problems.push({
              path: f.path,
              message: `${endpoint.path} is already served by ${owner}: give each endpoint its own path`,
            });
          continue;
        }
        claimed.set(endpoint.path, `${f.path} (${endpoint.kind === 'ws' ? 'ws_path' : endpoint.role})`);
        p.endpoints.push(
          p.batches && endpoint.role === 'input' && endpoint.kind === 'http'
            ? { ...endpoint, batches: true }
            : endpoint,
        );
      }
    }
  }
  return { streams, problems };
}

/**
 * The settings of a `portal_webhook` output (ours, not Bento's): the event its messages are,
 * the portal that lists the subscriptions, and the secret the gateway presents to the portal.
 */
export interface PortalWebhook {
  event_type: string;
  portal_url: string;
  secret?: string;
}

const PORTAL_WEBHOOK_FIELDS = new Set(['event_type', 'portal_url', 'secret']);

/** Problems with the `portal_webhook` outputs of a stream (anywhere in it, brokers included). */
function portalWebhookProblems(config: unknown, at: string, problems: StreamProblem[]): void {
  const walk = (v: unknown, path: string): void => {
    if (Array.isArray(v)) {
      v.forEach((x, i) => {
        walk(x, `${path}[${i}]`);
      });
      return;
    }
    const o = asPlainObject(v);
    if (o === undefined) return;
    for (const [k, child] of Object.entries(o)) {
      if (k !== 'portal_webhook') {
        walk(child, `${path}.${k}`);
        continue;
      }
      const here = `${path}.portal_webhook`;
      const settings = asPlainObject(child);
      if (settings === undefined) {
        problems.push({ path: here, message: 'an object with event_type, portal_url and secret' });
        continue;
      }
      for (const f of Object.keys(settings))
        if (!PORTAL_WEBHOOK_FIELDS.has(f))
          problems.push({ path: `${here}.${f}`, message: `field ${f} not recognised` });
      if (typeof settings.event_type !== 'string' || settings.event_type === '')
        problems.push({ path: `${here}.event_type`, message: 'required: the event the messages are' });
      else if (!isEventType(settings.event_type))
        // No product can list it (schemas/rules/portal.ts), so it would reach no subscription.
        problems.push({
          path: `${here}.event_type`,
          message: `${EVENT_TYPE_RULE}, as a portal product lists its subscribable events`,
        });
      const url = settings.portal_url;
      if (!isHttpUrl(url))
        problems.push({
          path: `${here}.portal_url`,
          message: 'required: the http(s) URL the webhook subscriptions are read from',
        });
      if (settings.secret !== undefined && typeof settings.secret !== 'string')
        problems.push({ path: `${here}.secret`, message: 'a string' });
    }
  };
  walk(config, at);
}

/**
 * The stream configuration with each `portal_webhook` output replaced by what `to` makes of it
 * (an `http_client` output posting to the gateway's delivery endpoint), numbered in document
 * order; the configuration itself is left untouched.
 */
export function replacePortalWebhooks(
  config: Record<string, unknown>,
  to: (settings: PortalWebhook, index: number) => Record<string, unknown>,
): { config: Record<string, unknown>; count: number } {
  let count = 0;
  const walk = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(walk);
    const o = asPlainObject(v);
    if (o === undefined) return v;
    const out: Record<string, unknown> = {};
    for (const [k, child] of Object.entries(o)) {
      if (k === 'portal_webhook') {
        Object.assign(out, to(child as PortalWebhook, count++));
      } else out[k] = walk(child);
    }
    return out;
  };
  return { config: walk(config) as Record<string, unknown>, count };
}

/** Inputs that read a Kafka topic: the seed gives them `topic` as well as `topics`. */
const KAFKA_INPUTS = new Set(['kafka', 'kafka_franz']);

/** A stream as Bento runs it (`runnableStream`). */
export interface RunnableStream {
  /** The stream's configuration in Bento's own forms, without `rate_limit_resources`. */
  config: Record<string, unknown>;
  /** The rate limit resources the gateway creates on Bento for the stream, by name. */
  rateLimits: Map<string, Record<string, unknown>>;
  problems: StreamProblem[];
}

/** The prefix of the names of a stream's rate limit resources on Bento (node-wide: one per stream). */
export function resourcePrefix(id: string): string {
  return `s${createHash('sha256').update(id).digest('hex').slice(0, 12)}`;
}

/**
 * The stream `config` (at document path `at`) as Bento runs it, with the problems that would make
 * Bento refuse it when it is created (which its lint does not see: a reference to a resource that
 * does not exist):
 * - the seed's forms in Bento's: a `rate_limit` given as a duration (`rate_limit: 1s`) becomes a
 *   rate limit resource the gateway creates for the stream, `local` with `count: 1` and that
 *   `interval` (at most one message per duration); a Kafka input's `topic` becomes `topics`;
 * - its own rate limits (`rate_limit_resources`, which Bento takes only as node-wide resources in
 *   streams mode) taken out and renamed `<prefix>_<label>`, so two streams' labels never meet;
 * - every reference to a rate limit (`rate_limit: <label>` of inputs, outputs and the `http`
 *   processor, `resource` of the `rate_limit` processor) renamed to match, and one that names
 *   neither a duration nor a rate limit of the stream is a problem at its field.
 * The management API and the admission webhook check with it (lib/bento/streams.ts
 * `checkStreams`), and the gateway runs what it makes (gateway/streams/host.ts), so what is stored
 * is what runs.
 */
export function runnableStream(config: Record<string, unknown>, at: string, prefix: string): RunnableStream {
  const rateLimits = new Map<string, Record<string, unknown>>();
  const problems: StreamProblem[] = [];
  const renamed = new Map<string, string>();
  const declared = config.rate_limit_resources;
  if (declared !== undefined && !Array.isArray(declared))
    problems.push({
      path: `${at}.rate_limit_resources`,
      message: 'a list of rate limits, each with a label',
    });
  if (Array.isArray(declared))
    declared.forEach((r, i) => {
      const here = `${at}.rate_limit_resources[${i}]`;
      const o = asPlainObject(r);
      if (o === undefined || typeof o.label !== 'string' || !/^[a-z0-9_]{1,64}$/.test(o.label)) {
        problems.push({
          path: `${here}.label`,
          message: 'required: a label of lower-case letters, digits and _, which rate_limit fields name',
        });
        return;
      }
      const { label, ...rest } = o;
      if (renamed.has(label)) {
        problems.push({ path: `${here}.label`, message: `${label} is declared twice` });
        return;
      }
      const name = `${prefix}_${label}`;
      renamed.set(label, name);
      rateLimits.set(name, rest);
    });
  let every = 0;
  const durations = new Map<string, string>();
  /** The resource a `rate_limit` reference at `path` names, or undefined (a problem) when none. */
  const resolve = (value: unknown, path: string): unknown => {
    if (typeof value !== 'string') return value;
    const own = renamed.get(value);
    if (own !== undefined) return own;
    // A Go duration as Bento parses one (`500ms`, `1s`, `1m30s`).
    if (parseDuration(value) !== undefined) {
      let name = durations.get(value);
      if (name === undefined) {
        name = `${prefix}_every_${String(every++)}`;
        durations.set(value, name);
        rateLimits.set(name, { local: { count: 1, interval: value } });
      }
      return name;
    }
    problems.push({
      path,
      message: `${JSON.stringify(value)} is neither a duration (e.g. 1s: at most one message a second) nor the label of one of the stream's rate_limit_resources`,
    });
    return value;
  };
  const walk = (v: unknown, path: string, input: boolean): unknown => {
    if (Array.isArray(v)) return v.map((x, i) => walk(x, `${path}[${i}]`, input));
    const o = asPlainObject(v);
    if (o === undefined) return v;
    const out: Record<string, unknown> = {};
    for (const [k, child] of Object.entries(o)) {
      const here = `${path}.${k}`;
      if (k === 'rate_limit' && typeof child === 'string') out[k] = resolve(child, here);
      else if (k === 'rate_limit' && typeof asPlainObject(child)?.resource === 'string') {
        const c = asPlainObject(child) ?? {};
        out[k] = { ...c, resource: resolve(c.resource, `${here}.resource`) };
      } else if (input && KAFKA_INPUTS.has(k) && asPlainObject(child)?.topic !== undefined) {
        const { topic, ...rest } = asPlainObject(child) ?? {};
        if (rest.topics !== undefined)
          problems.push({ path: `${here}.topic`, message: 'give topic or topics, not both' });
        else if (typeof topic !== 'string' || topic === '')
          problems.push({ path: `${here}.topic`, message: 'the name of the topic to read' });
        out[k] = walk({ ...rest, topics: [topic] }, here, input);
      } else out[k] = walk(child, here, input || k === 'input' || k === 'inputs');
    }
    return out;
  };
  const { rate_limit_resources: _declared, ...rest } = config;
  return { config: walk(rest, at, false) as Record<string, unknown>, rateLimits, problems };
}
