/**
 * The bounded buffer of analytics records waiting to be sent, kept cheap on the request path
 * (issue 34 item 5: the protected case with analytics on at 0.9 of it off at least). A request
 * that is over writes what its record needs into the columns of a ring: numbers into typed
 * arrays, and references to strings the request already holds (method, path, key, alias) or the
 * route holds (organisation, API, listen path) into arrays allocated once. No object is built
 * and nothing is derived per request: the batch (columns, each of its strings written once:
 * schemas/rules/analytics-batch.ts), its path templates and its rounding are made when it is
 * taken to be sent, and a batch's repeated paths are templated once. Slots already sent are cleared, so the buffer holds
 * no request's strings longer than it must. The columns grow by doubling up to the buffer's size.
 */
import {
  AnalyticsColumnsWriter,
  recordsOfColumns,
  type AnalyticsColumns,
} from '../../schemas/rules/analytics-batch.ts';
import type { AnalyticsDetail } from '../../schemas/rules/analytics-detail.ts';
import type { AnalyticsRecord, RefusalReason } from '../../schemas/rules/analytics.ts';
import { contentLength, type RequestContext } from '../pipeline/context.ts';
import type { RouteInfo } from '../pipeline/route.ts';
import { pathTemplate, refusalOf } from './records.ts';

/** The bodies of detailed records one batch holds at most, in characters (about bytes). */
export const DETAIL_CHARS_PER_BATCH = 1024 * 1024;
/** Slots of a new buffer (fewer when the buffer is smaller); it grows by doubling. */
const FIRST_CAPACITY = 1024;

/** The records a gateway process holds until they are sent (see the module comment). */
export class RecordBuffer {
  readonly #max: number;
  #capacity = 0;
  /** Index of the oldest record. */
  #head = 0;
  #length = 0;
  #time = new Float64Array(0);
  #status = new Int32Array(0);
  /** Milliseconds from routing to the end (NaN: the start was not noted). */
  #latency = new Float64Array(0);
  #upstream = new Float64Array(0);
  #requestBytes = new Float64Array(0);
  #responseBytes = new Float64Array(0);
  #route: (RouteInfo | undefined)[] = [];
  #version: string[] = [];
  #key: string[] = [];
  #alias: string[] = [];
  #method: string[] = [];
  /** The raw path, or the `track_endpoints` entry when `#endpoint` says so. */
  #path: string[] = [];
  #endpoint = new Uint8Array(0);
  #refusal: (RefusalReason | '')[] = [];
  #detail: (AnalyticsDetail | undefined)[] = [];

  /** `max`: records held at most (`analytics_buffer_size`). */
  constructor(max: number) {
    this.#max = max;
    this.#grow(Math.min(max, FIRST_CAPACITY));
  }

  /** Records held now. */
  get length(): number {
    return this.#length;
  }

  /**
   * Keeps the record of a request that is over (`endpoint`: its `track_endpoints` entry, `''`
   * none; `time`: milliseconds since the epoch; `end`: `performance.now()`); false, keeping
   * nothing, when the buffer is full.
   */
  push(ctx: RequestContext, status: number, endpoint: string, time: number, end: number): boolean {
    if (this.#length === this.#capacity) {
      if (this.#capacity >= this.#max) return false;
      this.#grow(Math.min(this.#max, this.#capacity * 2));
    }
    let i = this.#head + this.#length;
    if (i >= this.#capacity) i -= this.#capacity;
    const state = ctx.state;
    this.#time[i] = time;
    this.#status[i] = status;
    this.#latency[i] = state.startedAt === undefined ? NaN : end - state.startedAt;
    this.#upstream[i] =
      state.upstreamStartedAt !== undefined && state.upstreamRespondedAt !== undefined
        ? state.upstreamRespondedAt - state.upstreamStartedAt
        : 0;
    this.#requestBytes[i] = contentLength(ctx.headers['content-length']);
    this.#responseBytes[i] = ctx.responseLength();
    this.#route[i] = ctx.route;
    this.#version[i] = state.version ?? '';
    this.#key[i] = state.keyId ?? '';
    this.#alias[i] = ctx.session?.alias ?? '';
    this.#method[i] = ctx.method;
    this.#endpoint[i] = endpoint === '' ? 0 : 1;
    this.#path[i] = endpoint === '' ? ctx.path : endpoint;
    this.#refusal[i] = refusalOf(ctx);
    // An API with enable_detailed_recording (middleware/detailed-recording): its bodies.
    this.#detail[i] = state.detail?.read();
    this.#length++;
    return true;
  }

  /**
   * The oldest `n` records (fewer when fewer are held, or when their detailed records' bodies
   * reach DETAIL_CHARS_PER_BATCH), as a batch of columns sent at `sampleRate`
   * (schemas/rules/analytics-batch.ts), taken out of the buffer.
   */
  takeColumns(n: number, sampleRate: number): AnalyticsColumns {
    let count = Math.min(n, this.#length);
    const w = new AnalyticsColumnsWriter();
    /** Raw path -> template, for this batch: its requests mostly share a few paths. */
    const templates = new Map<string, string>();
    let detailChars = 0;
    for (let k = 0; k < count; k++) {
      let i = this.#head + k;
      if (i >= this.#capacity) i -= this.#capacity;
      const route = this.#route[i];
      const raw = this.#path[i] ?? '';
      let path: string;
      if (this.#endpoint[i] === 1) {
        path = (route?.listenPath ?? '') + (raw.startsWith('/') ? raw : `/${raw}`);
      } else {
        path = templates.get(raw) ?? '';
        if (path === '') {
          path = pathTemplate(raw);
          templates.set(raw, path);
        }
      }
      const latency = this.#latency[i] ?? NaN;
      const detail = this.#detail[i];
      w.add(
        this.#time[i] ?? 0,
        route?.api.org_id ?? '',
        route?.id ?? '',
        this.#version[i] ?? '',
        this.#key[i] ?? '',
        this.#alias[i] ?? '',
        this.#method[i] ?? '',
        path,
        this.#status[i] ?? 0,
        Number.isNaN(latency) ? 0 : latency,
        Math.max(0, this.#upstream[i] ?? 0),
        this.#requestBytes[i] ?? 0,
        this.#responseBytes[i] ?? 0,
        this.#refusal[i] ?? '',
        detail,
      );
      this.#clear(i);
      if (detail !== undefined) {
        detailChars += detail.request.body.length + detail.response.body.length;
        // Bodies enough for one request to the dashboard (its limit is 4 MiB): the rest wait.
        if (detailChars >= DETAIL_CHARS_PER_BATCH) count = k + 1;
      }
    }
    this.#head += count;
    if (this.#head >= this.#capacity) this.#head -= this.#capacity;
    this.#length -= count;
    if (this.#length === 0) this.#head = 0;
    return w.batch(sampleRate);
  }

  /** The oldest `n` records (fewer when fewer are held), as the dashboard reads them, taken out. */
  take(n: number): AnalyticsRecord[] {
    return recordsOfColumns(this.takeColumns(n, 1));
  }

  /** Lets go of the strings and objects of a slot already taken. */
  #clear(i: number): void {
    this.#route[i] = undefined;
    this.#version[i] = '';
    this.#key[i] = '';
    this.#alias[i] = '';
    this.#method[i] = '';
    this.#path[i] = '';
    this.#detail[i] = undefined;
  }

  /** Columns of `capacity` slots, the records held copied over oldest first. */
  #grow(capacity: number): void {
    const order = (k: number): number => {
      const i = this.#head + k;
      return i >= this.#capacity ? i - this.#capacity : i;
    };
    const numbers = <T extends Float64Array | Int32Array | Uint8Array>(old: T, made: T): T => {
      for (let k = 0; k < this.#length; k++) made[k] = old[order(k)] ?? 0;
      return made;
    };
    const refs = <T>(old: T[], empty: T): T[] => {
      const made = new Array<T>(capacity).fill(empty);
      for (let k = 0; k < this.#length; k++) made[k] = old[order(k)] ?? empty;
      return made;
    };
    this.#time = numbers(this.#time, new Float64Array(capacity));
    this.#status = numbers(this.#status, new Int32Array(capacity));
    this.#latency = numbers(this.#latency, new Float64Array(capacity));
    this.#upstream = numbers(this.#upstream, new Float64Array(capacity));
    this.#requestBytes = numbers(this.#requestBytes, new Float64Array(capacity));
    this.#responseBytes = numbers(this.#responseBytes, new Float64Array(capacity));
    this.#endpoint = numbers(this.#endpoint, new Uint8Array(capacity));
    this.#route = refs<RouteInfo | undefined>(this.#route, undefined);
    this.#version = refs(this.#version, '');
    this.#key = refs(this.#key, '');
    this.#alias = refs(this.#alias, '');
    this.#method = refs(this.#method, '');
    this.#path = refs(this.#path, '');
    this.#refusal = refs<RefusalReason | ''>(this.#refusal, '');
    this.#detail = refs<AnalyticsDetail | undefined>(this.#detail, undefined);
    this.#head = 0;
    this.#capacity = capacity;
  }
}
