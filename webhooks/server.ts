/**
 * The only module that knows AdmissionReview (admission.k8s.io/v1): it decodes a review, runs
 * the resource's defaulter or validator, and encodes the answer (a JSON patch, a refusal that
 * lists every problem, warnings). An unexpected failure denies the request with a generic
 * message and an error ID; the detail goes to the log under that ID.
 */
import { randomBytes } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '../lib/log.ts';
import { errorMessage } from '../lib/errors.ts';
import { model } from '../schemas/rules/read.ts';
import { asObject, asString, metadataOf } from './access.ts';
import { causeReason, fieldErrorBody, formatFieldError } from './field-error.ts';
import type { Verdict } from './field-error.ts';
import { handlers as defaultHandlers } from './handlers.ts';
import type { Handler } from './handlers.ts';
import { diff, equal } from './json-patch.ts';
import { CacheNotSyncedError } from './lookups.ts';
import { nestingProblem } from '../schemas/rules/nesting.ts';
import type { Lookups } from './lookups.ts';
import { readBodyText } from '../lib/http/json-body.ts';
import { findRoute, trimTrailingSlashes, type Route } from '../lib/http/router.ts';

/** What the server needs from the process. */
export interface ServerDeps {
  lookups: Lookups;
  log: Logger;
  /** Readiness: certificates loaded (and, self-managed, the CA bundle published). */
  ready: () => boolean;
  handlers?: readonly Handler[];
  /** A review that takes longer is denied as an internal error (the API server gives up at 10s). */
  deadlineMs?: number;
  /** Called after every review, for metrics. */
  onReview?: (review: ReviewOutcome) => void;
  /**
   * Called after a validating review allowed a change that is not a dry run (the write may still
   * fail after): how the route-claim cache learns of document changes in ConfigMaps it does not
   * watch (webhooks/route-claims.ts).
   */
  onAdmitted?: (resource: string, review: AdmissionRequest) => void;
  /**
   * Where the mutating endpoints add the operator's finalizer: the namespaces the operator
   * watches (empty is all), or false when no operator removes it (a webhook without one).
   */
  finalizerNamespaces?: readonly string[] | false;
}

/** What {@link ServerDeps.onReview} learns about a review. */
export interface ReviewOutcome {
  resource: string;
  mode: 'mutate' | 'validate';
  /** `allowed`, `denied` or `error` (an internal error, denied with an error ID). */
  outcome: 'allowed' | 'denied' | 'error';
  seconds: number;
}

/** The AdmissionReview request fields we use. */
export interface AdmissionRequest {
  uid: string;
  kind: { group: string; version: string; kind: string };
  name?: string;
  namespace?: string;
  operation: 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';
  object?: unknown;
  oldObject?: unknown;
  dryRun?: boolean;
}

/** A Kubernetes Status, as an AdmissionResponse carries it. */
export interface AdmissionStatus {
  code: number;
  reason: string;
  message: string;
  details?: {
    name?: string;
    group?: string;
    kind?: string;
    causes: { reason: string; field: string; message: string }[];
  };
}

/** The AdmissionReview response. */
export interface AdmissionResponse {
  uid: string;
  allowed: boolean;
  status?: AdmissionStatus;
  patchType?: 'JSONPatch';
  patch?: string;
  warnings?: string[];
}

/** The AdmissionReview we answer with. */
export interface AdmissionReview {
  apiVersion: 'admission.k8s.io/v1';
  kind: 'AdmissionReview';
  response: AdmissionResponse;
}

/** A request body that is not an AdmissionReview v1 request. */
export class BadReviewError extends Error {}

const OPERATIONS = ['CREATE', 'UPDATE', 'DELETE', 'CONNECT'];

/** Decodes and checks the request part of an AdmissionReview body. */
export function decodeReview(body: unknown): AdmissionRequest {
  const review = model<{ apiVersion: string; kind: string; request: unknown }>(body);
  if (review?.apiVersion !== 'admission.k8s.io/v1' || review.kind !== 'AdmissionReview') {
    throw new BadReviewError('expected an AdmissionReview of admission.k8s.io/v1');
  }
  const req = asObject(review.request);
  const uid = asString(req?.uid);
  const kind = asObject(req?.kind);
  const operation = asString(req?.operation);
  if (req === undefined || uid === undefined || kind === undefined || operation === undefined) {
    throw new BadReviewError('the AdmissionReview has no request with uid, kind and operation');
  }
  if (!OPERATIONS.includes(operation)) throw new BadReviewError(`unknown operation ${operation}`);
  return {
    uid,
    kind: {
      group: asString(kind.group) ?? '',
      version: asString(kind.version) ?? '',
      kind: asString(kind.kind) ?? '',
    },
    operation: operation as AdmissionRequest['operation'],
    ...(typeof req.name === 'string' ? { name: req.name } : {}),
    ...(typeof req.namespace === 'string' ? { namespace: req.namespace } : {}),
    ...(req.object === undefined || req.object === null ? {} : { object: req.object }),
    ...(req.oldObject === undefined || req.oldObject === null ? {} : { oldObject: req.oldObject }),
    ...(req.dryRun === true ? { dryRun: true } : {}),
  };
}

/** The object with `metadata.namespace` set from the request when the object lacks it. */
function withNamespace(obj: unknown, namespace: string | undefined): unknown {
  const o = asObject(obj);
  const meta = asObject(o?.metadata);
  if (o === undefined || meta === undefined || namespace === undefined || meta.namespace !== undefined)
    return obj;
  return { ...o, metadata: { ...meta, namespace } };
}

const beingDeleted = (obj: unknown): boolean => metadataOf(obj).deletionTimestamp !== undefined;

/**
 * The object with the operator's finalizer added when the operator will manage it and it lacks
 * it: the operator's first reconcile then finds it and makes no write for it. Added on UPDATE too,
 * so an object that lacks it (created before the webhook, or an apply that dropped it) gets it
 * back within that write rather than through another one by the operator.
 */
function withFinalizer(handler: Handler, obj: unknown, namespaces: readonly string[] | false): unknown {
  const finalizer = handler.finalizer?.(obj);
  const o = asObject(obj);
  const meta = asObject(o?.metadata);
  const ns = asString(meta?.namespace);
  if (finalizer === undefined || namespaces === false || o === undefined || meta === undefined) return obj;
  // Outside the operator's namespaces nobody would remove it: the delete would hang.
  if (ns === undefined || (namespaces.length > 0 && !namespaces.includes(ns))) return obj;
  const current = Array.isArray(meta.finalizers) ? (meta.finalizers as unknown[]) : [];
  if (current.includes(finalizer)) return obj;
  return { ...o, metadata: { ...meta, finalizers: [...current, finalizer] } };
}

/**
 * Defaults the object of a CREATE or UPDATE and adds the operator's finalizer (in
 * `finalizerNamespaces`); the answer carries the JSON patch.
 */
export function mutate(
  handler: Handler,
  req: AdmissionRequest,
  finalizerNamespaces: readonly string[] | false = false,
): AdmissionResponse {
  if (handler.default === undefined || req.object === undefined || req.operation === 'DELETE') {
    return { uid: req.uid, allowed: true };
  }
  // Being deleted: only finalizers change now, and one is never added back.
  if (beingDeleted(req.object)) return { uid: req.uid, allowed: true };
  // Too deep to walk: validation refuses it (see validate).
  if (deepSpec(req.object) !== undefined) return { uid: req.uid, allowed: true };
  const original = withNamespace(req.object, req.namespace);
  const ops = diff(original, withFinalizer(handler, handler.default(original), finalizerNamespaces));
  const warnings = handler.defaultWarnings?.(original) ?? [];
  const warned = warnings.length > 0 ? { warnings } : {};
  if (ops.length === 0) return { uid: req.uid, allowed: true, ...warned };
  return {
    uid: req.uid,
    allowed: true,
    patchType: 'JSONPatch',
    patch: Buffer.from(JSON.stringify(ops)).toString('base64'),
    ...warned,
  };
}

/** Validates a CREATE, UPDATE or DELETE. */
export async function validate(
  handler: Handler,
  req: AdmissionRequest,
  lookups: Lookups,
): Promise<AdmissionResponse> {
  const allow: AdmissionResponse = { uid: req.uid, allowed: true };
  let verdict: Verdict;
  const subject = req.operation === 'DELETE' ? req.oldObject : req.object;
  // Refused before any rule walks it: a spec nested thousands of levels deep would exhaust the
  // stack of the checks below.
  const deep = req.operation === 'DELETE' ? undefined : deepSpec(req.object);
  if (deep !== undefined) {
    return {
      uid: req.uid,
      allowed: false,
      status: refusal(handler, req, subject, { errors: [deep], warnings: [] }),
    };
  }
  switch (req.operation) {
    case 'CREATE':
      if (req.object === undefined) throw new BadReviewError('CREATE without an object');
      verdict = await handler.validate(withNamespace(req.object, req.namespace), undefined, lookups);
      break;
    case 'UPDATE':
      if (req.object === undefined) throw new BadReviewError('UPDATE without an object');
      // Finalizers being removed, labels changing: what was admitted stays admitted.
      if (beingDeleted(req.object)) return allow;
      if (req.oldObject !== undefined && equal(handler.watched(req.object), handler.watched(req.oldObject))) {
        return allow;
      }
      verdict = await handler.validate(
        withNamespace(req.object, req.namespace),
        withNamespace(req.oldObject, req.namespace),
        lookups,
      );
      break;
    case 'DELETE':
      if (handler.validateDelete === undefined || req.oldObject === undefined) return allow;
      verdict = await handler.validateDelete(withNamespace(req.oldObject, req.namespace), lookups);
      break;
    default:
      return allow;
  }
  const response: AdmissionResponse = { uid: req.uid, allowed: verdict.errors.length === 0 };
  if (verdict.warnings.length > 0) response.warnings = verdict.warnings;
  if (verdict.errors.length > 0) response.status = refusal(handler, req, subject, verdict);
  return response;
}

/** The problem of an object whose spec nests too deep (schemas/rules/nesting.ts), if any. */
function deepSpec(obj: unknown): Verdict['errors'][number] | undefined {
  return nestingProblem('spec', asObject(obj)?.spec, 'spec');
}

function refusal(
  handler: Handler,
  req: AdmissionRequest,
  subject: unknown,
  verdict: Verdict,
): AdmissionStatus {
  const name = req.name ?? asString(metadataOf(subject).name) ?? '';
  const ns = req.namespace ?? asString(metadataOf(subject).namespace);
  const who = `${handler.kind} ${ns === undefined ? '' : `${ns}/`}${name}`;
  const deleting = req.operation === 'DELETE';
  const lines = verdict.errors.map(formatFieldError);
  // A DELETE refusal names the object and its dependents in its own words; no field path helps.
  const message = deleting
    ? verdict.errors.map((e) => e.message).join('\n')
    : lines.length === 1
      ? `${who} is invalid: ${lines.join('')}`
      : `${who} is invalid (${lines.length} problems):\n${lines.map((l) => `  - ${l}`).join('\n')}`;
  return {
    code: deleting ? 403 : 422,
    reason: deleting ? 'Forbidden' : 'Invalid',
    message,
    details: {
      name,
      group: handler.group,
      kind: handler.kind,
      // kubectl prints an Invalid status as `The <Kind> "<name>" is invalid:` and these causes.
      causes: verdict.errors.map((e) => ({
        reason: causeReason[e.type],
        field: e.path,
        message: fieldErrorBody(e),
      })),
    },
  };
}

/** A denial that hides the detail of an internal error behind an ID. */
export function internalError(uid: string, id: string): AdmissionResponse {
  return {
    uid,
    allowed: false,
    status: {
      code: 500,
      reason: 'InternalError',
      message: `internal error in the svc admission webhook (error ID ${id}): retry; if it persists, give the ID to your cluster admin`,
    },
  };
}

/** The refusal of a review that needs a watch cache not yet loaded: the caller may retry. */
export function notSynced(uid: string, err: CacheNotSyncedError): AdmissionResponse {
  return {
    uid,
    allowed: false,
    status: { code: 503, reason: 'ServiceUnavailable', message: err.message },
  };
}

function withDeadline<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      reject(new Error(`review took longer than ${ms}ms`));
    }, ms);
  });
  return Promise.race([p, timeout]).finally(() => {
    clearTimeout(timer);
  });
}

const envelope = (response: AdmissionResponse): AdmissionReview => ({
  apiVersion: 'admission.k8s.io/v1',
  kind: 'AdmissionReview',
  response,
});

/** The largest review body: it holds the object and the old object (a ConfigMap may be 1 MiB each, base64 grows it). */
const MAX_REVIEW_BYTES = 16 * 1024 * 1024;

/** A body that is not JSON, or too large: answered with its status and message. */
class BodyError extends Error {
  readonly status: number;
  constructor(status: number, message: string) {
    super(message);
    this.status = status;
  }
}

/** Writes a JSON answer. */
function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

/** Writes a plain-text answer. */
function sendText(res: ServerResponse, status: number, text: string, head: boolean): void {
  res.writeHead(status, {
    'content-type': 'text/plain; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(head ? undefined : text);
}

/**
 * The request body as JSON: `{}` when it is not sent as JSON (then no review, a 400), a
 * BodyError when it is malformed (400) or too large (413).
 */
async function readReviewBody(req: IncomingMessage): Promise<unknown> {
  const text = await readBodyText(
    req,
    MAX_REVIEW_BYTES,
    () => new BodyError(413, 'request entity too large'),
  );
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/json') return {};
  try {
    return JSON.parse(text) as unknown;
  } catch (err) {
    throw new BodyError(400, errorMessage(err));
  }
}

/** A handler of one admission route. */
type Serve = (req: IncomingMessage, res: ServerResponse, path: string) => Promise<void>;

/**
 * The admission server's request listener (node:http, lib/http/router.ts): the admission
 * endpoints of every handler, /healthz and /readyz. Give it to `http(s).createServer`.
 */
export function admissionApp(deps: ServerDeps): (req: IncomingMessage, res: ServerResponse) => void {
  const deadline = deps.deadlineMs ?? 8_000;
  const probe =
    (ok: () => boolean): Serve =>
    (req, res) => {
      const up = ok();
      sendText(res, up ? 200 : 503, up ? 'ok' : 'not ready', req.method === 'HEAD');
      return Promise.resolve();
    };
  const routes: Route<Serve>[] = [
    { path: /^\/healthz$/, methods: { GET: probe(() => true) } },
    { path: /^\/readyz$/, methods: { GET: probe(deps.ready) } },
  ];
  for (const handler of deps.handlers ?? defaultHandlers) {
    const serve =
      (mode: 'mutate' | 'validate'): Serve =>
      async (req, res, path) => {
        let review: AdmissionRequest;
        try {
          review = decodeReview(await readReviewBody(req));
        } catch (err) {
          if (err instanceof BodyError) {
            sendJson(res, err.status, { error: err.message });
            return;
          }
          sendJson(res, 400, { error: errorMessage(err) });
          return;
        }
        const started = performance.now();
        const done = (outcome: ReviewOutcome['outcome']): void => {
          deps.onReview?.({
            resource: handler.resource,
            mode,
            outcome,
            seconds: (performance.now() - started) / 1000,
          });
        };
        // A child logger costs more than most reviews: made only when something is logged.
        const fields = (): Record<string, unknown> => ({
          uid: review.uid,
          kind: review.kind.kind,
          name: review.name,
          namespace: review.namespace,
          operation: review.operation,
          mode,
        });
        const log = (): Logger => deps.log.child(fields());
        try {
          if (review.kind.kind !== handler.kind || review.kind.group !== handler.group) {
            throw new Error(
              `${path} admits ${handler.kind}, got ${review.kind.group}/${review.kind.kind}: check the webhook configuration's rules`,
            );
          }
          const response =
            mode === 'mutate'
              ? mutate(handler, review, deps.finalizerNamespaces)
              : await withDeadline(validate(handler, review, deps.lookups), deadline);
          if (!response.allowed)
            log().info('admission denied', { causes: response.status?.details?.causes.map((c) => c.field) });
          else
            deps.log.debug('admission allowed', {
              ...fields(),
              patched: response.patch !== undefined,
              warnings: response.warnings?.length ?? 0,
            });
          sendJson(res, 200, envelope(response));
          done(response.allowed ? 'allowed' : 'denied');
          if (mode === 'validate' && response.allowed && review.dryRun !== true) {
            deps.onAdmitted?.(handler.resource, review);
          }
        } catch (err) {
          if (err instanceof CacheNotSyncedError) {
            log().warn('admission refused: cache not synced', { error: err.message });
            sendJson(res, 200, envelope(notSynced(review.uid, err)));
            done('error');
            return;
          }
          const id = randomBytes(6).toString('hex');
          log().error('admission failed', {
            errorId: id,
            error: errorMessage(err),
            stack: err instanceof Error ? err.stack : undefined,
          });
          sendJson(res, 200, envelope(internalError(review.uid, id)));
          done('error');
        }
      };
    const escaped = handler.resource.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    if (handler.default !== undefined)
      routes.push({ path: new RegExp(`^/mutate/${escaped}$`), methods: { POST: serve('mutate') } });
    routes.push({ path: new RegExp(`^/validate/${escaped}$`), methods: { POST: serve('validate') } });
  }
  return (req, res) => {
    const path = trimTrailingSlashes((req.url ?? '/').split('?')[0] ?? '/');
    const method = req.method ?? 'GET';
    const found = findRoute(routes, method, path, { headAsGet: true });
    // Any path or method the server does not serve is 404, as it was under express.
    if (found.kind !== 'found') {
      sendJson(res, 404, { error: `Cannot ${method} ${path}` });
      return;
    }
    found.handler(req, res, path).catch((err: unknown) => {
      deps.log.error('request failed', { error: errorMessage(err) });
      if (!res.headersSent) sendJson(res, 500, { error: 'internal error' });
      else res.destroy();
    });
  };
}
