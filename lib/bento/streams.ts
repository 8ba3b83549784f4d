/**
 * The streams of an API (`x-svc-streaming.streams`) as the gateway runs them on Bento: their
 * stream IDs, the HTTP endpoints their `http_server` inputs and outputs serve, the rules a
 * document must follow beyond Bento's own, and the check that asks Bento (its streams API lints a
 * configuration sent with PUT to an unknown stream ID, and creates nothing). The management API
 * and the admission webhook both call `checkStreams`, so what one admits the other admits.
 */
import { createHash, randomUUID } from 'node:crypto';
import { errorMessage } from '../errors.ts';
import { takesBatches, withBatchRepair } from './batching.ts';
import { emitYaml, locate } from './yaml.ts';

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

/** What Bento runs for a stream: its configuration, with `BATCH_REPAIR` when it takes batches. */
export function bentoConfig(stream: PlannedStream): Record<string, unknown> {
  return stream.batches ? withBatchRepair(stream.config) : stream.config;
}

/** The Bento stream ID of stream `name` of API `apiId`. */
export function streamId(apiId: string, name: string): string {
  return `${apiId}.${name}`;
}

const asObject = (v: unknown): Record<string, unknown> | undefined =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;

/** `x-svc-streaming.streams` of a document, when it is an object. */
export function streamsOf(doc: unknown): Record<string, unknown> | undefined {
  return asObject(asObject(asObject(doc)?.['x-svc-streaming'])?.streams);
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
  const c = asObject(connector);
  if (c === undefined) return;
  const hs = c.http_server;
  if (hs !== undefined) found.push({ role, settings: asObject(hs) ?? {}, path: `${path}.http_server` });
  const list = (v: unknown, at: string): void => {
    if (Array.isArray(v))
      v.forEach((child, i) => {
        httpServers(child, role, `${at}[${i}]`, found);
      });
  };
  // Connectors that hold others: brokers, and switch, fallback, retry (outputs), sequence and
  // read_until (inputs).
  list(asObject(c.broker)?.[role === 'input' ? 'inputs' : 'outputs'], `${path}.broker.${role}s`);
  if (role === 'output') {
    const cases = asObject(c.switch)?.cases;
    if (Array.isArray(cases))
      cases.forEach((k, i) => {
        httpServers(asObject(k)?.output, role, `${path}.switch.cases[${i}].output`, found);
      });
    list(c.fallback, `${path}.fallback`);
    httpServers(asObject(c.retry)?.output, role, `${path}.retry.output`, found);
  } else {
    list(asObject(c.sequence)?.inputs, `${path}.sequence.inputs`);
    httpServers(asObject(c.read_until)?.input, role, `${path}.read_until.input`, found);
  }
}

const stringList = (v: unknown): string[] | undefined =>
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
    const config = asObject(raw);
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
    const o = asObject(v);
    if (o === undefined) return;
    for (const [k, child] of Object.entries(o)) {
      if (k !== 'portal_webhook') {
        walk(child, `${path}.${k}`);
        continue;
      }
      const here = `${path}.portal_webhook`;
      const settings = asObject(child);
      if (settings === undefined) {
        problems.push({ path: here, message: 'an object with event_type, portal_url and secret' });
        continue;
      }
      for (const f of Object.keys(settings))
        if (!PORTAL_WEBHOOK_FIELDS.has(f))
          problems.push({ path: `${here}.${f}`, message: `field ${f} not recognised` });
      if (typeof settings.event_type !== 'string' || settings.event_type === '')
        problems.push({ path: `${here}.event_type`, message: 'required: the event the messages are' });
      const url = settings.portal_url;
      if (typeof url !== 'string' || !/^https?:\/\/[^/]/.test(url))
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
    const o = asObject(v);
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

/** A Go duration as Bento parses one (`500ms`, `1s`, `1m30s`). */
const DURATION = /^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/;

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
 * The management API and the admission webhook check with it (`checkStreams`), and the gateway
 * runs what it makes (gateway/streams/host.ts), so what is stored is what runs.
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
      const o = asObject(r);
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
    if (DURATION.test(value)) {
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
    const o = asObject(v);
    if (o === undefined) return v;
    const out: Record<string, unknown> = {};
    for (const [k, child] of Object.entries(o)) {
      const here = `${path}.${k}`;
      if (k === 'rate_limit' && typeof child === 'string') out[k] = resolve(child, here);
      else if (k === 'rate_limit' && typeof asObject(child)?.resource === 'string') {
        const c = asObject(child) ?? {};
        out[k] = { ...c, resource: resolve(c.resource, `${here}.resource`) };
      } else if (input && KAFKA_INPUTS.has(k) && asObject(child)?.topic !== undefined) {
        const { topic, ...rest } = asObject(child) ?? {};
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

/** What a `portal_webhook` becomes when only its validity matters (lint). */
function lintPlaceholder(): Record<string, unknown> {
  return { http_client: { url: 'http://127.0.0.1:1/deliver', verb: 'POST' } };
}

/** Bento's streams API, as far as the check needs it. */
export interface BentoApi {
  call(
    method: string,
    urlPath: string,
    body?: string,
    timeoutMs?: number,
  ): Promise<{ status: number; body: string }>;
}

/**
 * How long a stream that goes is given to stop by itself before Bento is made to close it at once.
 * Bento 1.16.2 stops a stream gracefully for as long as the `DELETE /streams/{id}` call lasts, and
 * a stream with an `http_server` output never finishes that (in streams mode the output serves on
 * Bento's shared server, and its graceful close waits for a server of its own that does not
 * exist): the call never answers. When the caller gives up (closes the connection), Bento closes
 * every component of the stream at once; a second DELETE then removes it (docs/design/streams.md, `Deleting a stream`).
 */
const GRACEFUL_STOP_MS = 250;
/** How long the calls after that first one may take, each. */
const FORCED_STOP_MS = 1_000;
/** How long a stream may take to go in all before the sync fails. */
const DELETE_DEADLINE_MS = 5_000;

/**
 * Stops and removes stream `id` on Bento, within GRACEFUL_STOP_MS when it stops by itself and
 * within about that plus one round trip when Bento has to close it (see GRACEFUL_STOP_MS).
 */
export async function deleteStream(bento: BentoApi, id: string): Promise<void> {
  const urlPath = `/streams/${encodeURIComponent(id)}`;
  const deadline = Date.now() + DELETE_DEADLINE_MS;
  let timeoutMs = GRACEFUL_STOP_MS;
  for (;;) {
    let last: string;
    try {
      const res = await bento.call('DELETE', urlPath, undefined, timeoutMs);
      // 404: gone (the call that gave up removed it after all).
      if (res.status === 200 || res.status === 404) return;
      last = `${res.status} ${res.body.trim().slice(0, 300)}`;
      await new Promise((r) => setTimeout(r, 50));
    } catch (err) {
      // No answer in time: Bento saw the call end and is closing the stream at once.
      last = errorMessage(err);
    }
    if (Date.now() >= deadline) throw new Error(`DELETE ${id}: ${last}`);
    timeoutMs = FORCED_STOP_MS;
  }
}

/** The ID checks are sent to; never created (a PUT to an unknown ID lints and answers 404). */
const LINT_ID = 'svc-lint-only';

/**
 * Bento's verdict on one stream configuration: its lint errors and configuration errors, each as
 * `<document path>: <Bento's message>` (Bloblang positions as the mapping's own line and column).
 */
export async function lintStream(
  bento: BentoApi,
  at: string,
  config: Record<string, unknown>,
): Promise<string[]> {
  const emitted = emitYaml(config, at);
  const answer = await bento.call('PUT', `/streams/${LINT_ID}`, emitted.text);
  if (answer.status === 404) return [];
  if (answer.status === 400) {
    let lints: string[] | undefined;
    try {
      const parsed = JSON.parse(answer.body) as { lint_errors?: unknown };
      lints = stringList(parsed.lint_errors);
    } catch {
      lints = undefined;
    }
    const messages = lints ?? [answer.body];
    return messages.map((m) => locate(m, emitted, at));
  }
  throw new Error(`the stream processor answered ${answer.status}: ${answer.body.slice(0, 300)}`);
}

/**
 * The prefix of the rate limits the check builds on Bento (`svc_check_<label>`,
 * `svc_check_every_<n>`: replaced by the next check that uses the name; Bento cannot delete one).
 */
const CHECK_PREFIX = 'svc_check';

/** The in-process channel the check stream's inert inputs read: nothing ever writes to it. */
const CHECK_INPROC = 'svc_check_nothing';

/**
 * Bento's verdict on the rate limit resources of a stream, built as the gateway will build them
 * (`POST /resources/rate_limit/...` lints and builds one: its lint alone does not parse durations
 * or counts); `where` names the field each came from.
 */
async function checkRateLimits(
  bento: BentoApi,
  run: RunnableStream,
  where: (name: string) => string,
): Promise<string[]> {
  const out: string[] = [];
  for (const [name, rl] of run.rateLimits) {
    const answer = await bento.call('POST', `/resources/rate_limit/${name}`, JSON.stringify(rl));
    if (answer.status === 200) continue;
    if (answer.status !== 400 && answer.status !== 502)
      throw new Error(`the stream processor answered ${answer.status}: ${answer.body.slice(0, 300)}`);
    let messages = [answer.body.trim().replace(/^Error: /, '')];
    try {
      messages = stringList((JSON.parse(answer.body) as { lint_errors?: unknown }).lint_errors) ?? messages;
    } catch {
      // not JSON: the build error as text
    }
    for (const m of messages)
      out.push(`${where(name)}: ${m.replace(/ path root\.rate_limit_resources/, '')}`);
  }
  return out;
}

/** The connector type of an input or output object (its one key besides label and processors). */
function connectorKind(o: Record<string, unknown>): string | undefined {
  return Object.keys(o).find((k) => k !== 'label' && k !== 'processors');
}

/**
 * The stream as the check builds it on Bento: every connector that would reach outside Bento (a
 * broker, a URL) replaced by one that does nothing, since Bento runs a stream as soon as it
 * builds it (docs/design/streams.md, `Checking a stream at write time`): inputs by an in-process
 * channel nobody writes to, outputs by `drop`. What stays is built as it will be: `http_server`
 * inputs and outputs (served on Bento's own loopback server under the check's stream ID, which
 * nothing routes to), the connectors that hold others (broker, switch, fallback, retry, sequence,
 * read_until), `resource` references, and every processor.
 */
export function inertStream(config: Record<string, unknown>): Record<string, unknown> {
  const list = (v: unknown, f: (x: unknown) => unknown): unknown => (Array.isArray(v) ? v.map(f) : v);
  const input = (v: unknown): unknown => {
    const o = asObject(v);
    if (o === undefined) return v;
    const kind = connectorKind(o);
    if (kind === undefined || kind === 'http_server' || kind === 'resource') return o;
    const settings = asObject(o[kind]) ?? {};
    const keep = o.processors === undefined ? {} : { processors: o.processors };
    switch (kind) {
      case 'broker':
        return { ...o, broker: { ...settings, inputs: list(settings.inputs, input) } };
      case 'sequence':
        return { ...o, sequence: { ...settings, inputs: list(settings.inputs, input) } };
      case 'read_until':
        return { ...o, read_until: { ...settings, input: input(settings.input) } };
      default:
        return { inproc: CHECK_INPROC, ...keep };
    }
  };
  const output = (v: unknown): unknown => {
    const o = asObject(v);
    if (o === undefined) return v;
    const kind = connectorKind(o);
    if (kind === undefined || kind === 'http_server' || kind === 'resource') return o;
    const settings = asObject(o[kind]) ?? {};
    const keep = o.processors === undefined ? {} : { processors: o.processors };
    switch (kind) {
      case 'broker':
        return { ...o, broker: { ...settings, outputs: list(settings.outputs, output) } };
      case 'switch':
        return {
          ...o,
          switch: {
            ...settings,
            cases: list(settings.cases, (c) => {
              const k = asObject(c);
              return k === undefined ? c : { ...k, output: output(k.output) };
            }),
          },
        };
      case 'fallback':
        return { ...o, fallback: list(o.fallback, output) };
      case 'retry':
        return { ...o, retry: { ...settings, output: output(settings.output) } };
      default:
        return { drop: {}, ...keep };
    }
  };
  return { ...config, input: input(config.input), output: output(config.output) };
}

/**
 * Bento's verdict on building the stream (what its lint does not see: durations, references to
 * resources, settings checked when a component is made): the stream made inert (`inertStream`) is
 * created under a stream ID of its own and deleted at once. Problems at the document path of the
 * component Bento names.
 */
async function checkBuild(bento: BentoApi, at: string, config: Record<string, unknown>): Promise<string[]> {
  const id = `svc-check-${randomUUID()}`;
  const answer = await bento.call('POST', `/streams/${id}`, emitYaml(inertStream(config), at).text);
  if (answer.status === 200) {
    await deleteStream(bento, id);
    return [];
  }
  if (answer.status !== 400 && answer.status !== 502)
    throw new Error(`the stream processor answered ${answer.status}: ${answer.body.slice(0, 300)}`);
  const message = answer.body.trim().replace(/^Error: /, '');
  // `failed to init input <no label> path root.input.broker.inputs.1: failed to parse 'timeout' ...`
  const m = /path root((?:\.[A-Za-z0-9_]+)*): (.*)$/s.exec(message);
  if (m === null) return [`${at}: ${message}`];
  const steps = (m[1] ?? '').split('.').filter((x) => x !== '');
  let where = steps.map((x) => (/^\d+$/.test(x) ? `[${x}]` : `.${x}`)).join('');
  // Bento names the component (`root.input`); the field is in its connector's settings.
  let node: unknown = config;
  for (const x of steps) node = Array.isArray(node) ? node[Number(x)] : asObject(node)?.[x];
  const component = asObject(node);
  const kind = component === undefined ? undefined : connectorKind(component);
  if (kind !== undefined && asObject(component?.[kind]) !== undefined) where += `.${kind}`;
  const field = /failed to parse '([A-Za-z0-9_]+)'/.exec(m[2] ?? '')?.[1];
  return [`${at}${where}${field === undefined ? '' : `.${field}`}: ${m[2] ?? message}`];
}

/**
 * Every reason the streams of `doc` can't run: the gateway's rules (`planStreams`, which include
 * the references Bento resolves only when it creates a stream), then Bento's verdict on what the
 * gateway will run (`runnableStream`): each rate limit resource built, each stream linted and
 * parsed, then built (made inert: `inertStream`) and deleted. Problems are `<path>: <message>`
 * lines.
 */
export async function checkStreams(bento: BentoApi, apiId: string, doc: unknown): Promise<string[]> {
  const { streams, problems } = planStreams(apiId, doc);
  const out = problems.map((p) => `${p.path}: ${p.message}`);
  if (out.length > 0) return out;
  for (const s of streams) {
    const at = `${STREAMS_PATH}.${s.name}`;
    const run = runnableStream(s.config, at, CHECK_PREFIX);
    const declared = Array.isArray(s.config.rate_limit_resources) ? s.config.rate_limit_resources : [];
    const found = await checkRateLimits(bento, run, (name) => {
      const i = declared.findIndex((r) => `${CHECK_PREFIX}_${String(asObject(r)?.label)}` === name);
      return i >= 0 ? `${at}.rate_limit_resources[${i}]` : `${at} (rate_limit)`;
    });
    const { config } = replacePortalWebhooks(run.config, lintPlaceholder);
    found.push(...(await lintStream(bento, at, config)));
    if (found.length === 0) found.push(...(await checkBuild(bento, at, config)));
    out.push(...found);
  }
  return out;
}
