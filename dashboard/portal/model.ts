/**
 * The portal's documents as the admin API takes them (docs/portal.md): the settings, a product
 * and a catalogue, each checked whole. A problem is `<field>: <message>`; an unknown field is
 * one, so nothing sent is silently ignored.
 */
import { formatProblem } from '../../schemas/rules/field-problem.ts';
import { idProblem } from '../../schemas/rules/ids.ts';
import {
  DEVELOPER_APPROVALS,
  EVENT_TYPE_RULE,
  isEventType,
  isHttpUrl,
  isOasDocument,
  KEY_APPROVALS,
  oasOfText,
  PRODUCT_AUTH_TYPES,
  SESSION_LIFETIME_S,
} from '../../schemas/rules/portal.ts';
import { isPlainObject } from '../../lib/plain-object.ts';
import type { StoreReader } from '../store/store.ts';

/** The portal's settings with defaults filled in. */
export interface PortalSettings {
  signup_enabled: boolean;
  developer_approval: (typeof DEVELOPER_APPROVALS)[number];
  session_lifetime_s: number;
  enable_dcr: boolean;
}

export const SETTINGS_DEFAULTS: PortalSettings = {
  signup_enabled: true,
  developer_approval: 'manual',
  session_lifetime_s: SESSION_LIFETIME_S.default,
  enable_dcr: false,
};

/** A product as stored (the reference's APIDescription). */
export interface Product {
  name: string;
  description?: string;
  show: boolean;
  auth_type: (typeof PRODUCT_AUTH_TYPES)[number];
  policy_id?: string;
  api_id?: string;
  docs?: { doc_type: 'oas'; documentation?: Record<string, unknown>; url?: string };
  key_approval: (typeof KEY_APPROVALS)[number];
  subscribable_events: string[];
  /** SHA-256 of the feed secret (never answered). */
  feed_secret_hash?: string;
}

function unknownFields(
  body: Record<string, unknown>,
  known: readonly string[],
  problems: string[],
  prefix = '',
): void {
  for (const k of Object.keys(body)) {
    if (!known.includes(k)) problems.push(`${prefix}${k}: Unsupported field: use one of ${known.join(', ')}`);
  }
}

function oneOf<T extends string>(
  v: unknown,
  field: string,
  values: readonly T[],
  fallback: T,
  problems: string[],
): T {
  if (v === undefined) return fallback;
  if (typeof v === 'string' && (values as readonly string[]).includes(v)) return v as T;
  problems.push(`${field}: Unsupported value: use one of ${values.map((x) => `"${x}"`).join(', ')}`);
  return fallback;
}

function bool(v: unknown, field: string, fallback: boolean, problems: string[]): boolean {
  if (v === undefined) return fallback;
  if (typeof v === 'boolean') return v;
  problems.push(`${field}: Invalid value: must be true or false`);
  return fallback;
}

/** The settings a `PUT /api/portal/config` body gives, or its problems. */
export function checkSettings(body: Record<string, unknown>): {
  settings: PortalSettings;
  problems: string[];
} {
  const problems: string[] = [];
  unknownFields(
    body,
    ['signup_enabled', 'developer_approval', 'session_lifetime_s', 'enable_dcr', 'dcr_options'],
    problems,
  );
  const d = SETTINGS_DEFAULTS;
  const life = body.session_lifetime_s ?? d.session_lifetime_s;
  const { min, max } = SESSION_LIFETIME_S;
  if (typeof life !== 'number' || !Number.isInteger(life) || life < min || life > max) {
    problems.push(`session_lifetime_s: Invalid value: whole seconds from ${String(min)} to ${String(max)}`);
  }
  const dcr = bool(body.enable_dcr, 'enable_dcr', false, problems);
  if (dcr) {
    problems.push(
      'enable_dcr: Unsupported value: dynamic client registration is not supported by this portal; leave it false',
    );
  }
  if (body.dcr_options !== undefined) {
    problems.push(
      'dcr_options: Unsupported field: dynamic client registration is not supported by this portal',
    );
  }
  return {
    settings: {
      signup_enabled: bool(body.signup_enabled, 'signup_enabled', d.signup_enabled, problems),
      developer_approval: oneOf(
        body.developer_approval,
        'developer_approval',
        DEVELOPER_APPROVALS,
        d.developer_approval,
        problems,
      ),
      session_lifetime_s: typeof life === 'number' ? life : d.session_lifetime_s,
      enable_dcr: false,
    },
    problems,
  };
}

/** The stored settings of `org`, defaults filled in. */
export async function settingsOf(store: StoreReader, org: string): Promise<PortalSettings> {
  const d = await store.get(org, 'portal-config', 'config');
  return { ...SETTINGS_DEFAULTS, ...(d?.body as Partial<PortalSettings> | undefined) };
}

function checkDocs(v: unknown, problems: string[]): Product['docs'] {
  if (v === undefined) return undefined;
  if (!isPlainObject(v)) {
    problems.push('docs: Invalid value: an object with doc_type and documentation or url');
    return undefined;
  }
  unknownFields(v, ['doc_type', 'documentation', 'url'], problems, 'docs.');
  oneOf(v.doc_type ?? 'oas', 'docs.doc_type', ['oas'] as const, 'oas', problems);
  if ((v.documentation === undefined) === (v.url === undefined)) {
    problems.push('docs: Invalid value: give exactly one of documentation (the OAS document) or url');
    return undefined;
  }
  if (v.url !== undefined) {
    if (!isHttpUrl(v.url)) {
      problems.push('docs.url: Invalid value: an http or https URL');
      return undefined;
    }
    return { doc_type: 'oas', url: v.url };
  }
  let doc: unknown = v.documentation;
  if (typeof doc === 'string') doc = oasOfText(doc);
  if (!isOasDocument(doc)) {
    problems.push(
      'docs.documentation: Invalid value: an OpenAPI document (a JSON object, or its JSON or YAML text, plain or base64, with openapi or swagger)',
    );
    return undefined;
  }
  return { doc_type: 'oas', documentation: doc };
}

/** Checks a product body (its ID apart); `store` resolves `policy_id` and `api_id` in `org`. */
export async function checkProduct(
  store: StoreReader,
  org: string,
  body: Record<string, unknown>,
): Promise<{ product: Product; problems: string[] }> {
  const problems: string[] = [];
  unknownFields(
    body,
    [
      'id',
      'name',
      'description',
      'show',
      'auth_type',
      'policy_id',
      'api_id',
      'docs',
      'key_approval',
      'subscribable_events',
    ],
    problems,
  );
  if (typeof body.name !== 'string' || body.name.trim() === '') {
    problems.push('name: Required value: the name developers see');
  }
  if (body.description !== undefined && typeof body.description !== 'string') {
    problems.push('description: Invalid value: a string');
  }
  const authType = oneOf(body.auth_type, 'auth_type', PRODUCT_AUTH_TYPES, 'authToken', problems);
  const policy = body.policy_id;
  const api = body.api_id;
  if (policy !== undefined && api !== undefined) {
    problems.push('policy_id: Invalid value: give policy_id or api_id, not both');
  } else if (policy !== undefined) {
    if (typeof policy !== 'string' || (await store.get(org, 'policies', policy)) === undefined) {
      problems.push(`policy_id: Not found: policy ${JSON.stringify(policy)} is not one of your organisation`);
    }
  } else if (api !== undefined) {
    if (typeof api !== 'string' || (await store.get(org, 'apis', api)) === undefined) {
      problems.push(`api_id: Not found: API ${JSON.stringify(api)} is not one of your organisation`);
    }
  } else if (authType === 'authToken') {
    problems.push(
      'policy_id: Required value: the policy (or api_id, the API) the keys of an authToken product grant',
    );
  }
  const events = body.subscribable_events ?? [];
  if (!Array.isArray(events)) {
    problems.push('subscribable_events: Invalid value: a list of event types');
  } else {
    events.forEach((e, i) => {
      if (!isEventType(e)) problems.push(`subscribable_events[${i}]: Invalid value: ${EVENT_TYPE_RULE}`);
    });
  }
  const docs = checkDocs(body.docs, problems);
  const product: Product = {
    name: typeof body.name === 'string' ? body.name : '',
    ...(typeof body.description === 'string' ? { description: body.description } : {}),
    show: bool(body.show, 'show', true, problems),
    auth_type: authType,
    ...(typeof policy === 'string' ? { policy_id: policy } : {}),
    ...(typeof api === 'string' && policy === undefined ? { api_id: api } : {}),
    ...(docs === undefined ? {} : { docs }),
    key_approval: oneOf(body.key_approval, 'key_approval', KEY_APPROVALS, 'manual', problems),
    subscribable_events: Array.isArray(events)
      ? [...new Set(events.filter((e) => typeof e === 'string'))]
      : [],
  };
  return { product, problems };
}

/** Checks a catalogue body: `{name?, apis: [product ID...]}`. */
export async function checkCatalogue(
  store: StoreReader,
  org: string,
  body: Record<string, unknown>,
): Promise<{ catalogue: { name: string; apis: string[] }; problems: string[] }> {
  const problems: string[] = [];
  unknownFields(body, ['id', 'name', 'apis'], problems);
  if (body.name !== undefined && typeof body.name !== 'string')
    problems.push('name: Invalid value: a string');
  const apis = body.apis ?? [];
  const out: string[] = [];
  if (!Array.isArray(apis)) problems.push('apis: Invalid value: a list of product IDs');
  else {
    for (const [i, id] of apis.entries()) {
      if (typeof id !== 'string' || (await store.get(org, 'portal-products', id)) === undefined) {
        problems.push(`apis[${i}]: Not found: product ${JSON.stringify(id)} is not one of your portal's`);
      } else out.push(id);
    }
  }
  return { catalogue: { name: typeof body.name === 'string' ? body.name : '', apis: out }, problems };
}

/** A caller-given document ID's problem, if any. */
export function idError(id: unknown): string | undefined {
  const bad = idProblem('id', id);
  return bad === undefined ? undefined : formatProblem(bad);
}
