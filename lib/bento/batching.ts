/**
 * Publishes sent to Bento together: the gateway may pass the publishes that reach one stream
 * input in the same turn of its event loop to Bento as one multipart request, which Bento's
 * `http_server` input takes as one batch (each part one message), so a batch costs one request,
 * one pass through the pipeline and one write per consumer instead of one of each per message.
 *
 * Only where nobody can tell the difference. A stream qualifies when
 * - its input is an `http_server` itself (not in a broker), with no `rate_limit` (counted per
 *   request) and no `sync_response` anywhere in the stream (answers are per request);
 * - every processor, at the input, in the pipeline and at the outputs (nested ones included),
 *   handles each message on its own (`PER_MESSAGE`), and no mapping asks for the batch
 *   (`batch_index()`, `batch_size()`);
 * - every output delivers each message of a batch as it would deliver the message alone
 *   (`outputTransparent`): an `http_server` only as a server-sent events stream and WebSocket,
 *   since its `path` answers a batch as one multipart response and a raw `stream_path` joins it.
 *
 * Bento gives the messages of a multipart request the request's own headers as metadata, so
 * the request says the original `Content-Type` (`X-Svc-Batch-Content-Type`) and a processor
 * put first at the input (`BATCH_REPAIR`) gives each message the `Content-Type` and
 * `Content-Length` metadata it would have had alone; the publishes of one batch have the same
 * headers otherwise (gateway/streams/batch.ts groups them by their headers). When nothing in
 * the stream reads metadata or sends it on (`metadataSeen`), the processor is left out.
 */

import { asPlainObject } from '../plain-object.ts';

/** The header that marks a batch, and the one that carries the publishes' `Content-Type`. */
export const BATCH_HEADER = 'x-svc-batch';
export const BATCH_TYPE_HEADER = 'x-svc-batch-content-type';

/**
 * Put first among the input's processors of a stream that takes batches: the metadata of each
 * message of a batch as it would be had it been published alone. Messages published alone have
 * no `X-Svc-Batch` metadata (the gateway removes the header from client requests).
 */
export const BATCH_REPAIR = {
  mutation: [
    'if metadata("X-Svc-Batch") != null {',
    '  meta "Content-Type" = metadata("X-Svc-Batch-Content-Type") | deleted()',
    '  meta "Content-Length" = content().length().string()',
    '  meta "X-Svc-Batch" = deleted()',
    '  meta "X-Svc-Batch-Content-Type" = deleted()',
    '}',
  ].join('\n'),
};

/** Processors that handle each message of a batch on its own (those that hold others: checked inside). */
const PER_MESSAGE = new Set([
  'mapping',
  'bloblang',
  'mutation',
  'log',
  'noop',
  'jmespath',
  'jq',
  'json_schema',
  'compress',
  'decompress',
  'grok',
  'switch',
  'branch',
  'try',
  'catch',
  'for_each',
]);

/** Fields every component may have besides its own. */
const COMMON = new Set(['label', 'processors']);

/** The component type of a connector or processor (its one key besides `label` and `processors`). */
function kindOf(o: Record<string, unknown>): string | undefined {
  const kinds = Object.keys(o).filter((k) => !COMMON.has(k));
  return kinds.length === 1 ? kinds[0] : undefined;
}

function processorsTransparent(list: unknown): boolean {
  if (list === undefined) return true;
  if (!Array.isArray(list)) return false;
  return list.every((p) => processorTransparent(p));
}

function processorTransparent(p: unknown): boolean {
  const o = asPlainObject(p);
  if (o === undefined) return false;
  const kind = kindOf(o);
  if (kind === undefined || !PER_MESSAGE.has(kind)) return false;
  const settings = o[kind];
  switch (kind) {
    case 'switch':
      return (
        Array.isArray(settings) &&
        settings.every((c) => processorsTransparent(asPlainObject(c)?.processors ?? []))
      );
    case 'branch':
      return processorsTransparent(asPlainObject(settings)?.processors ?? []);
    case 'try':
    case 'catch':
    case 'for_each':
      return processorsTransparent(settings);
    default:
      return true;
  }
}

/** Whether an output delivers each message of a batch as it would the message alone. */
function outputTransparent(output: unknown): boolean {
  const o = asPlainObject(output);
  if (o === undefined) return false;
  const kind = kindOf(o);
  if (kind === undefined || !processorsTransparent(o.processors)) return false;
  const settings = asPlainObject(o[kind]) ?? {};
  switch (kind) {
    case 'http_server':
      // `path` (default /get) answers a batch as one multipart response; a raw `stream_path`
      // (the default format) writes a batch as one newline-joined chunk.
      return settings.path === '' && settings.stream_format === 'event_source';
    case 'broker': {
      const pattern = settings.pattern ?? 'fan_out';
      const outputs = settings.outputs;
      return (
        (pattern === 'fan_out' || pattern === 'fan_out_sequential') &&
        Array.isArray(outputs) &&
        outputs.every((c) => outputTransparent(c))
      );
    }
    case 'kafka':
    case 'kafka_franz':
    case 'nats':
    case 'mqtt':
    case 'amqp_0_9':
    case 'drop':
      return true;
    default:
      return false;
  }
}

/** Whether the gateway may pass publishes to `config` (one stream) as batches. */
export function takesBatches(config: Record<string, unknown>): boolean {
  const input = asPlainObject(config.input);
  const server = input === undefined ? undefined : asPlainObject(input.http_server);
  if (input === undefined || server === undefined || kindOf(input) !== 'http_server') return false;
  if (server.rate_limit !== undefined && server.rate_limit !== '') return false;
  if (config.buffer !== undefined) return false;
  const text = JSON.stringify(config);
  if (/sync_response|batch_index|batch_size/.test(text)) return false;
  const pipeline = asPlainObject(config.pipeline);
  return (
    processorsTransparent(input.processors) &&
    processorsTransparent(pipeline?.processors) &&
    outputTransparent(config.output)
  );
}

/** Outputs that send a message's metadata along by default (as Kafka or AMQP headers). */
function sendsMetadata(output: unknown): boolean {
  const o = asPlainObject(output);
  if (o === undefined) return false;
  if (o.kafka !== undefined || o.amqp_0_9 !== undefined) return true;
  const outputs = asPlainObject(o.broker)?.outputs;
  return Array.isArray(outputs) && outputs.some((c) => sendsMetadata(c));
}

/**
 * Whether anything in a stream that takes batches can see a message's metadata: a mapping or
 * interpolation that reads it, or an output that sends it. When nothing can, `BATCH_REPAIR` is
 * left out (it would cost Bento a mapping per message for nothing).
 */
export function metadataSeen(config: Record<string, unknown>): boolean {
  return /meta|@/.test(JSON.stringify(config)) || sendsMetadata(config.output);
}

/**
 * The configuration of a stream that takes batches, as Bento runs it: `BATCH_REPAIR` first at
 * the input when anything can see the metadata.
 */
export function withBatchRepair(config: Record<string, unknown>): Record<string, unknown> {
  if (!metadataSeen(config)) return config;
  const input = asPlainObject(config.input) ?? {};
  const processors: unknown[] = Array.isArray(input.processors) ? (input.processors as unknown[]) : [];
  return { ...config, input: { ...input, processors: [BATCH_REPAIR, ...processors] } };
}
