/**
 * The streams of an API as the gateway runs them on Bento, and the check that asks Bento (its
 * streams API lints a configuration sent with PUT to an unknown stream ID, and creates nothing;
 * the check then builds the stream made inert and deletes it). The document rules that need no
 * Bento process are schemas/rules/streams.ts; `checkStreams` applies them first. The management
 * API and the admission webhook both call `checkStreams`, so what one admits the other admits.
 */
import { randomUUID } from 'node:crypto';
import { errorMessage } from '../errors.ts';
import { asPlainObject } from '../plain-object.ts';
import {
  planStreams,
  replacePortalWebhooks,
  runnableStream,
  stringList,
  STREAMS_PATH,
  type PlannedStream,
  type RunnableStream,
} from '../../schemas/rules/streams.ts';
import { withBatchRepair } from './batching.ts';
import { emitYaml, locate } from './yaml.ts';

/** What Bento runs for a stream: its configuration, with `BATCH_REPAIR` when it takes batches. */
export function bentoConfig(stream: PlannedStream): Record<string, unknown> {
  return stream.batches ? withBatchRepair(stream.config) : stream.config;
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
  /**
   * `v` with its connector replaced by `replace` (given the connector's kind, its settings and its
   * `processors`, if any); as it is when it is no connector or one kept as it is.
   */
  const inert = (
    v: unknown,
    replace: (
      o: Record<string, unknown>,
      kind: string,
      settings: Record<string, unknown>,
      keep: { processors?: unknown },
    ) => unknown,
  ): unknown => {
    const o = asPlainObject(v);
    if (o === undefined) return v;
    const kind = connectorKind(o);
    if (kind === undefined || kind === 'http_server' || kind === 'resource') return o;
    return replace(
      o,
      kind,
      asPlainObject(o[kind]) ?? {},
      o.processors === undefined ? {} : { processors: o.processors },
    );
  };
  /** `o` with the settings of its connector `kind` changed by `change`. */
  const changed = (
    o: Record<string, unknown>,
    kind: string,
    settings: Record<string, unknown>,
    change: Record<string, unknown>,
  ): Record<string, unknown> => ({ ...o, [kind]: { ...settings, ...change } });
  const input = (v: unknown): unknown =>
    inert(v, (o, kind, settings, keep) => {
      switch (kind) {
        case 'broker':
        case 'sequence':
          return changed(o, kind, settings, { inputs: list(settings.inputs, input) });
        case 'read_until':
          return changed(o, kind, settings, { input: input(settings.input) });
        default:
          return { inproc: CHECK_INPROC, ...keep };
      }
    });
  const output = (v: unknown): unknown =>
    inert(v, (o, kind, settings, keep) => {
      switch (kind) {
        case 'broker':
          return changed(o, kind, settings, { outputs: list(settings.outputs, output) });
        case 'switch':
          return changed(o, kind, settings, {
            cases: list(settings.cases, (c) => {
              const k = asPlainObject(c);
              return k === undefined ? c : { ...k, output: output(k.output) };
            }),
          });
        case 'fallback':
          return { ...o, fallback: list(o.fallback, output) };
        case 'retry':
          return changed(o, kind, settings, { output: output(settings.output) });
        default:
          return { drop: {}, ...keep };
      }
    });
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
  for (const x of steps) node = Array.isArray(node) ? node[Number(x)] : asPlainObject(node)?.[x];
  const component = asPlainObject(node);
  const kind = component === undefined ? undefined : connectorKind(component);
  if (kind !== undefined && asPlainObject(component?.[kind]) !== undefined) where += `.${kind}`;
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
      const i = declared.findIndex((r) => `${CHECK_PREFIX}_${String(asPlainObject(r)?.label)}` === name);
      return i >= 0 ? `${at}.rate_limit_resources[${i}]` : `${at} (rate_limit)`;
    });
    const { config } = replacePortalWebhooks(run.config, lintPlaceholder);
    found.push(...(await lintStream(bento, at, config)));
    if (found.length === 0) found.push(...(await checkBuild(bento, at, config)));
    out.push(...found);
  }
  return out;
}
