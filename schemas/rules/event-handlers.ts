/**
 * The rules of an API's `event_handlers` (GATEWAY-BEHAVIOUR §6), written once: the webhooks and
 * the gateway's management API refuse what the gateway could not deliver, and the gateway
 * compiles its handlers (gateway/events/compile.ts) from what `readEventHandlers` returns, so a
 * definition accepted at write time is one the gateway serves as written.
 *
 * A webhook's body is an inline template (`body_template`) with placeholders of the payload
 * fields, `{{.event}}` or the reference gateway's `{{.Type}}`, `{{ .Meta.Message }}`; the
 * reference's `template_path` (a Go template file on the gateway's disk) is refused: a file
 * beside one gateway is not beside the others, and a template is data of the API.
 */
import type { ClassicApiInput } from './read.ts';
import { quote, type FieldProblem, type FieldProblemType } from './field-problem.ts';
import { isPlainObject } from '../../lib/plain-object.ts';
import { FRAMING_HEADERS, HEADER_NAME } from './values.ts';

/** Every event the gateway fires. */
export const EVENT_NAMES = [
  'RateLimitExceeded',
  'QuotaExceeded',
  'TriggerExceeded',
  'AuthFailure',
  'KeyExpired',
] as const;
/** One of EVENT_NAMES. */
export type EventName = (typeof EVENT_NAMES)[number];

/** Names configurations may use for an event: the reference gateway spells one differently. */
export const EVENT_ALIASES: Readonly<Record<string, EventName>> = { RatelimitExceeded: 'RateLimitExceeded' };

/** The event a name in `event_handlers.events` stands for (an alias included), or undefined. */
export function eventNameOf(name: string): EventName | undefined {
  if ((EVENT_NAMES as readonly string[]).includes(name)) return name as EventName;
  return Object.hasOwn(EVENT_ALIASES, name) ? EVENT_ALIASES[name] : undefined;
}

/** The fields of an event's payload, as a webhook body template names them. */
export const TEMPLATE_FIELDS = ['event', 'message', 'path', 'origin', 'key', 'api_id', 'timestamp'] as const;
/** One of TEMPLATE_FIELDS. */
export type TemplateField = (typeof TEMPLATE_FIELDS)[number];

/** A compiled body template: literal text and payload fields, in order. */
export type TemplatePart = string | { field: TemplateField };

/** Placeholder names, compared lower case without `_` and without the reference's `Meta.`. */
const PLACEHOLDERS: Readonly<Record<string, TemplateField>> = {
  event: 'event',
  type: 'event',
  message: 'message',
  path: 'path',
  origin: 'origin',
  key: 'key',
  apiid: 'api_id',
  timestamp: 'timestamp',
};

const PLACEHOLDER_TEXT =
  '{{.event}}, {{.message}}, {{.path}}, {{.origin}}, {{.key}}, {{.api_id}} and {{.timestamp}} (or the reference spellings {{.Type}}, {{.Meta.Message}}, {{.Meta.Path}}, {{.Meta.Origin}}, {{.Meta.Key}}, {{.TimeStamp}})';

/**
 * Compiles a body template, or says why it can't be used. Placeholders are `{{.field}}` with
 * optional spaces inside the braces; nothing else of Go's template language (conditions,
 * pipelines, functions) is supported.
 */
export function compileBodyTemplate(template: string): TemplatePart[] | { problem: string } {
  const parts: TemplatePart[] = [];
  let at = 0;
  for (;;) {
    const open = template.indexOf('{{', at);
    if (open === -1) break;
    const close = template.indexOf('}}', open + 2);
    if (close === -1) {
      return {
        problem: `the "{{" at character ${open + 1} is not closed: write placeholders such as {{.event}}`,
      };
    }
    const action = template.slice(open, close + 2);
    const m = /^\{\{\s*\.((?:meta\.)?[A-Za-z_][A-Za-z0-9_]*)\s*\}\}$/i.exec(action);
    const field = m?.[1] === undefined ? undefined : placeholderField(m[1]);
    if (field === undefined) {
      return {
        problem: `${quote(action)} is not a placeholder of the event: use ${PLACEHOLDER_TEXT}; conditions, pipelines and functions are not supported`,
      };
    }
    if (open > at) parts.push(template.slice(at, open));
    parts.push({ field });
    at = close + 2;
  }
  if (at < template.length) parts.push(template.slice(at));
  return parts;
}

function placeholderField(name: string): TemplateField | undefined {
  const bare = name
    .replace(/^meta\./i, '')
    .replaceAll('_', '')
    .toLowerCase();
  return Object.hasOwn(PLACEHOLDERS, bare) ? PLACEHOLDERS[bare] : undefined;
}

/** Methods a webhook may use (the reference's list). */
export const WEBHOOK_METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;
/** One of WEBHOOK_METHODS. */
export type WebhookMethod = (typeof WEBHOOK_METHODS)[number];

/** Headers a webhook can't set: the gateway frames the request itself. */
const WEBHOOK_FRAMING_HEADERS: ReadonlySet<string> = new Set([...FRAMING_HEADERS, 'host']);
// A line break in a header value would end the header (header injection).
const BAD_VALUE = /[\r\n\0]/;

/** A log handler, read from its `handler_meta`. */
export interface LogHandlerSettings {
  kind: 'log';
  /** `handler_meta.prefix`: added to each log line, '' when unset. */
  prefix: string;
}

/** A webhook handler, read from its `handler_meta`. */
export interface WebhookSettings {
  kind: 'webhook';
  /** `handler_meta.name`, for logs ('' when unset). */
  name: string;
  method: WebhookMethod;
  /** `target_path`: an absolute http(s) URL. */
  url: string;
  /** `header_map`, names as written. */
  headers: Readonly<Record<string, string>>;
  /** `body_template` compiled; undefined sends the payload as JSON. */
  body: readonly TemplatePart[] | undefined;
  /** `event_timeout`: seconds during which an identical delivery is suppressed; 0 suppresses none. */
  cooldownSeconds: number;
}

/**
 * A handler of the gRPC plugin server (`cp_dynamic_handler`, the reference's coprocess event
 * handler): the event goes to its `DispatchEvent`, naming the handler.
 */
export interface CoprocessHandlerSettings {
  kind: 'coprocess';
  /** `handler_meta.name`: the handler the plugin server runs (the payload's `handler_name`). */
  name: string;
}

/** One handler of one event, read and checked. */
export type HandlerSettings = LogHandlerSettings | WebhookSettings | CoprocessHandlerSettings;

/** What `handler_meta` may hold, per handler. */
const META_FIELDS = {
  eh_log_handler: ['prefix', 'disabled'],
  eh_web_hook_handler: [
    'target_path',
    'method',
    'header_map',
    'body_template',
    'template_path',
    'event_timeout',
    'name',
    'id',
    'disabled',
  ],
  cp_dynamic_handler: ['name', 'disabled'],
} as const;

/** The handlers of an API's events, and what is wrong with the ones that can't be used. */
export interface EventHandlersRead {
  /** Usable handlers by event (an alias's handlers under the event it stands for). */
  handlers: Map<EventName, HandlerSettings[]>;
  /** Each with its field path relative to the definition. */
  problems: FieldProblem[];
}

/** A field path the way schemas/validate names them (`events.QuotaExceeded[0].handler_meta`). */
function pathOf(parts: readonly (string | number)[]): string {
  let path = '';
  for (const part of parts) {
    if (typeof part === 'number') path += `[${part}]`;
    else if (/^[A-Za-z_][\w-]*$/.test(part)) path += path === '' ? part : `.${part}`;
    else path += `[${JSON.stringify(part)}]`;
  }
  return path;
}

const ACCEPTED_EVENTS = `${EVENT_NAMES.slice(0, -1).join(', ')} or ${EVENT_NAMES[EVENT_NAMES.length - 1] ?? ''} (${Object.entries(
  EVENT_ALIASES,
)
  .map(([alias, name]) => `${alias} is accepted for ${name}`)
  .join('; ')})`;

/**
 * Reads `event_handlers.events`: every handler the gateway will run, by event, and a problem for
 * each setting it can't honour. Guarded: the definition may not have passed its schema (the
 * schema then reports the wrong types; this reads them as absent). Handlers with
 * `handler_meta.disabled: true` are skipped unchecked, as the reference gateway skips them; an
 * unknown event with no handlers is accepted (exported definitions list empty events).
 */
export function readEventHandlers(api: ClassicApiInput): EventHandlersRead {
  const handlers = new Map<EventName, HandlerSettings[]>();
  const problems: FieldProblem[] = [];
  const eh = api.event_handlers;
  const events = isPlainObject(eh) ? eh.events : undefined;
  if (!isPlainObject(events)) return { handlers, problems };
  for (const [name, list] of Object.entries(events)) {
    if (!Array.isArray(list) || list.length === 0) continue;
    const base = ['event_handlers', 'events', name];
    const event = eventNameOf(name);
    if (event === undefined) {
      problems.push({
        path: pathOf(base),
        type: 'NotSupported',
        message: `${quote(name)} is not an event this gateway fires: use ${ACCEPTED_EVENTS}`,
      });
      continue;
    }
    list.forEach((h: unknown, i) => {
      const read = readHandler(h, [...base, i], problems);
      if (read === undefined) return;
      const known = handlers.get(event);
      if (known === undefined) handlers.set(event, [read]);
      else known.push(read);
    });
  }
  return { handlers, problems };
}

/** Problems of `event_handlers` (checkClassicApi adds them to the definition's). */
export function eventHandlerProblems(api: ClassicApiInput): FieldProblem[] {
  return readEventHandlers(api).problems;
}

function readHandler(
  h: unknown,
  at: readonly (string | number)[],
  problems: FieldProblem[],
): HandlerSettings | undefined {
  if (!isPlainObject(h)) return undefined; // the schema reports it
  const kind = h.handler_name;
  if (kind !== 'eh_log_handler' && kind !== 'eh_web_hook_handler' && kind !== 'cp_dynamic_handler')
    return undefined; // the schema too
  const meta = h.handler_meta ?? {};
  if (!isPlainObject(meta)) return undefined;
  if (meta.disabled === true) return undefined;
  const metaAt = [...at, 'handler_meta'];
  const before = problems.length;
  const add: AddProblem = (field, type, message) => {
    problems.push({
      path: pathOf([...metaAt, ...(typeof field === 'string' ? [field] : field)]),
      type,
      message,
    });
  };
  const allowed: readonly string[] = META_FIELDS[kind];
  for (const field of Object.keys(meta)) {
    if (!allowed.includes(field)) {
      add(field, 'Invalid', `unknown setting of ${kind}: it reads ${allowed.join(', ')}`);
    }
  }
  if (meta.disabled !== undefined && typeof meta.disabled !== 'boolean') {
    add('disabled', 'Invalid', 'write true or false');
  }
  if (kind === 'eh_log_handler') {
    if (meta.prefix !== undefined && typeof meta.prefix !== 'string') {
      add('prefix', 'Invalid', 'write the prefix as a string');
    }
    if (problems.length > before) return undefined;
    return { kind: 'log', prefix: typeof meta.prefix === 'string' ? meta.prefix : '' };
  }
  if (kind === 'cp_dynamic_handler') {
    if (typeof meta.name !== 'string' || meta.name.trim() === '') {
      add('name', 'Required', 'name the handler the gRPC plugin server runs for the event');
    }
    if (problems.length > before) return undefined;
    return { kind: 'coprocess', name: String(meta.name).trim() };
  }
  const settings = readWebhook(meta, add);
  return problems.length > before ? undefined : settings;
}

/** Reports a problem of a `handler_meta` field (a path of fields below it). */
type AddProblem = (field: string | readonly string[], type: FieldProblemType, message: string) => void;

function readWebhook(meta: Record<string, unknown>, add: AddProblem): WebhookSettings {
  const url = typeof meta.target_path === 'string' ? meta.target_path.trim() : '';
  const urlProblem = webhookUrlProblem(meta.target_path);
  if (urlProblem !== undefined) add('target_path', urlProblem.type, urlProblem.message);

  let method: WebhookMethod = 'POST';
  if (meta.method !== undefined && meta.method !== '') {
    const m = typeof meta.method === 'string' ? meta.method.toUpperCase() : undefined;
    if (m !== undefined && (WEBHOOK_METHODS as readonly string[]).includes(m)) method = m as WebhookMethod;
    else
      add(
        'method',
        'NotSupported',
        `${quote(meta.method)}: use ${WEBHOOK_METHODS.join(', ')} (default POST)`,
      );
  }

  const headers: Record<string, string> = {};
  if (meta.header_map !== undefined) {
    if (!isPlainObject(meta.header_map))
      add('header_map', 'Invalid', 'write an object of header names and values');
    else {
      for (const [name, value] of Object.entries(meta.header_map)) {
        const field = ['header_map', name];
        if (!HEADER_NAME.test(name)) add(field, 'Invalid', `${quote(name)} is not a header name`);
        else if (WEBHOOK_FRAMING_HEADERS.has(name.toLowerCase())) {
          add(field, 'Forbidden', `the gateway sets ${name} itself: remove it`);
        } else if (typeof value !== 'string') add(field, 'Invalid', 'write the value as a string');
        else if (BAD_VALUE.test(value)) add(field, 'Invalid', 'a header value can not hold line breaks');
        else headers[name] = value;
      }
    }
  }

  if (meta.template_path !== undefined && meta.template_path !== '') {
    add(
      'template_path',
      'NotSupported',
      `templates in files are not supported by this gateway: write the template inline in body_template, with placeholders such as {{.event}} and {{.message}}, or remove template_path to send the event as JSON`,
    );
  }
  let body: TemplatePart[] | undefined;
  if (meta.body_template !== undefined) {
    if (typeof meta.body_template !== 'string')
      add('body_template', 'Invalid', 'write the template as a string');
    else {
      const compiled = compileBodyTemplate(meta.body_template);
      if ('problem' in compiled) add('body_template', 'Invalid', compiled.problem);
      else body = compiled;
    }
  }

  let cooldownSeconds = 0;
  if (meta.event_timeout !== undefined) {
    const t = meta.event_timeout;
    if (typeof t === 'number' && Number.isInteger(t) && t >= 0) cooldownSeconds = t;
    else {
      add(
        'event_timeout',
        'Invalid',
        `${quote(t)}: write the cooldown in whole seconds (0 or more): identical deliveries within it are suppressed`,
      );
    }
  }
  const name = typeof meta.name === 'string' ? meta.name : '';
  return { kind: 'webhook', name, method, url, headers, body, cooldownSeconds };
}

const WEBHOOK_EXAMPLE = 'https://alerts.example.com/gateway-events';

function webhookUrlProblem(raw: unknown): { type: FieldProblemType; message: string } | undefined {
  if (raw === undefined || raw === '') {
    return { type: 'Required', message: `set the URL the webhook delivers to, such as ${WEBHOOK_EXAMPLE}` };
  }
  if (typeof raw !== 'string')
    return { type: 'Invalid', message: `write the URL as a string, such as ${WEBHOOK_EXAMPLE}` };
  let u: URL;
  try {
    u = new URL(raw.trim());
  } catch {
    return {
      type: 'Invalid',
      message: `${quote(raw)} is not an absolute URL: write the scheme and host, such as ${WEBHOOK_EXAMPLE}`,
    };
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    return {
      type: 'Invalid',
      message: `${quote(raw)}: webhooks are delivered over http or https, such as ${WEBHOOK_EXAMPLE}`,
    };
  }
  if (u.username !== '' || u.password !== '') {
    return {
      type: 'Invalid',
      // The URL is not repeated: it holds a secret.
      message: 'the URL carries credentials: remove them from it and send them in header_map (Authorization)',
    };
  }
  return undefined;
}
