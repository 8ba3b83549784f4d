/**
 * What the gateway checks of one GraphQL request before it is proxied or executed, as pure
 * functions over the parsed document: its validity against the API's schema, introspection, the
 * depth of the selected operation (`max_query_depth`), and field-based permissions
 * (`restricted_types`, `allowed_types` of the key's access right). `checkOperation` runs them
 * all, in that order: the one rule for an operation over HTTP and one sent over WebSocket (a
 * subscription the gateway answers or relays).
 */
import {
  getOperationAST,
  GraphQLError,
  Kind,
  NoSchemaIntrospectionCustomRule,
  parse,
  specifiedRules,
  TypeInfo,
  validate,
  visit,
  visitWithTypeInfo,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLFormattedError,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import type { GatewaySession, GraphqlTypeFields } from '../../schemas/generated/models.ts';
import { BoundedLru } from './document-cache.ts';
import { keptFor } from '../pipeline/keep.ts';

/** A request parsed and validated, ready to be proxied or executed. */
export interface CheckedRequest {
  document: DocumentNode;
  operation: OperationDefinitionNode;
}

/**
 * `query` parsed and validated against `schema`, without its operation chosen: the document, or
 * the errors clients get. What the cache keeps: it depends on the schema and the text alone.
 */
export function validateDocument(
  schema: GraphQLSchema,
  query: string,
): { document: DocumentNode } | readonly GraphQLError[] {
  let document: DocumentNode;
  try {
    document = parse(query);
  } catch (err) {
    return [err instanceof GraphQLError ? err : new GraphQLError(String(err))];
  }
  const errors = validate(schema, document, specifiedRules);
  if (errors.length > 0) return errors;
  return { document: frozen(document) };
}

/**
 * The documents of recent queries, valid or not, by schema and query text: graphql-js takes
 * hundreds of microseconds to validate even a small query (most of it setting up its rules), and
 * clients send the same few queries over and over. A schema is built once per compiled API
 * (middleware.ts), so a reload that changes it starts with no entry for it, and an entry is never
 * read for another schema (the key starts with the schema's own number). Bounded: 500 queries and
 * 128 Ki characters of text in all (a document takes about a hundred bytes a character), a query
 * over 16 Ki characters is validated each time. One cache per process (each worker its own).
 */
export const documentCache = new BoundedLru<{ document: DocumentNode } | readonly GraphQLError[]>(
  500,
  128 * 1024,
  16 * 1024,
);

const schemaIds = new WeakMap<GraphQLSchema, number>();
let lastSchemaId = 0;

/** The key of `query` for `schema` in `documentCache`. */
function cacheKey(schema: GraphQLSchema, query: string): string {
  let id = schemaIds.get(schema);
  if (id === undefined) {
    id = ++lastSchemaId;
    schemaIds.set(schema, id);
  }
  return `${String(id)}\u0000${query}`;
}

/**
 * Parses `query` and validates it against `schema` (once per schema and query text while it stays
 * in `documentCache`); the errors clients get otherwise.
 */
export function parseAndValidate(
  schema: GraphQLSchema,
  query: string,
  operationName: string | undefined,
): CheckedRequest | readonly GraphQLError[] {
  const key = cacheKey(schema, query);
  let checked = documentCache.get(key);
  if (checked === undefined) {
    checked = validateDocument(schema, query);
    documentCache.set(key, checked);
  }
  if (!('document' in checked)) return checked;
  const document = checked.document;
  const operation = getOperationAST(document, operationName);
  if (operation === null || operation === undefined) {
    return [
      new GraphQLError(
        operationName === undefined
          ? 'Must provide operation name if query contains multiple operations.'
          : `Unknown operation named "${operationName}".`,
      ),
    ];
  }
  return { document, operation };
}

/**
 * `document` with each of its nodes frozen (their locations aside): a cached document is shared by
 * every request that sends its text, and none may change it for the next.
 */
function frozen(document: DocumentNode): DocumentNode {
  const freeze = (v: unknown): void => {
    if (v === null || typeof v !== 'object' || Object.isFrozen(v)) return;
    for (const [k, x] of Object.entries(v)) if (k !== 'loc') freeze(x);
    Object.freeze(v);
  };
  freeze(document);
  return document;
}

/** Introspection errors of documents already checked, by schema (`introspectionErrors`). */
const introspectionChecked = new WeakMap<GraphQLSchema, WeakMap<DocumentNode, readonly GraphQLError[]>>();

/** The introspection fields (`__schema`, `__type`) `document` asks for, as errors. */
export function introspectionErrors(schema: GraphQLSchema, document: DocumentNode): readonly GraphQLError[] {
  // A cached document (parseAndValidate) comes again: its answer with it.
  const bySchema = keptFor(
    introspectionChecked,
    schema,
    () => new WeakMap<DocumentNode, readonly GraphQLError[]>(),
  );
  let errors = bySchema.get(document);
  if (errors === undefined) {
    errors = validate(schema, document, [NoSchemaIntrospectionCustomRule]);
    if (Object.isFrozen(document)) bySchema.set(document, errors);
  }
  return errors;
}

/**
 * The depth of `operation`: the longest chain of nested fields, fragments followed
 * (`{ user { posts { title } } }` is 3).
 */
export function queryDepth(document: DocumentNode, operation: OperationDefinitionNode): number {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of document.definitions) {
    if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
  }
  const depthOf = (set: SelectionSetNode | undefined, seen: ReadonlySet<string>): number => {
    if (set === undefined) return 0;
    let most = 0;
    for (const s of set.selections) {
      if (s.kind === Kind.FIELD) {
        most = Math.max(most, 1 + depthOf(s.selectionSet, seen));
      } else if (s.kind === Kind.INLINE_FRAGMENT) {
        most = Math.max(most, depthOf(s.selectionSet, seen));
      } else {
        const f = fragments.get(s.name.value);
        // Validation refuses fragment cycles; `seen` keeps an unvalidated document finite too.
        if (f !== undefined && !seen.has(f.name.value)) {
          most = Math.max(most, depthOf(f.selectionSet, new Set([...seen, f.name.value])));
        }
      }
    }
    return most;
  };
  return depthOf(operation.selectionSet, new Set());
}

/** Field permissions compiled from an access right: `Type.field` sets. */
export interface FieldPermissions {
  restricted: ReadonlySet<string>;
  /** Undefined: every field not restricted is allowed. */
  allowed: ReadonlySet<string> | undefined;
}

/** The permissions of an access right, or undefined when it sets none. */
export function fieldPermissions(
  restricted: readonly GraphqlTypeFields[] | undefined,
  allowed: readonly GraphqlTypeFields[] | undefined,
): FieldPermissions | undefined {
  const set = (types: readonly GraphqlTypeFields[] | undefined): Set<string> =>
    new Set((types ?? []).flatMap((t) => t.fields.map((f) => `${t.name}.${f}`)));
  const r = set(restricted);
  const a = allowed !== undefined && allowed.length > 0 ? set(allowed) : undefined;
  if (r.size === 0 && a === undefined) return undefined;
  return { restricted: r, allowed: a };
}

/**
 * The first field of `document` the permissions refuse, as `{type, field}`: with `allowed` set,
 * any field not listed (introspection fields aside); otherwise a restricted one.
 */
export function refusedField(
  schema: GraphQLSchema,
  document: DocumentNode,
  perms: FieldPermissions,
): { type: string; field: string; error: GraphQLError } | undefined {
  const info = new TypeInfo(schema);
  let found: { type: string; field: string; error: GraphQLError } | undefined;
  visit(
    document,
    visitWithTypeInfo(info, {
      Field(node) {
        if (found !== undefined) return false;
        const parent = info.getParentType();
        const field = node.name.value;
        if (parent === null || parent === undefined || field.startsWith('__')) return undefined;
        const type = parent.name;
        const key = `${type}.${field}`;
        const refused = perms.allowed !== undefined ? !perms.allowed.has(key) : perms.restricted.has(key);
        if (refused) {
          found = {
            type,
            field,
            error: new GraphQLError(`field: ${field} is restricted on type: ${type}`, { nodes: node }),
          };
          return false;
        }
        return undefined;
      },
    }),
  );
  return found;
}

/** What `checkOperation` reads of an API: its schema, and whether it serves introspection. */
export interface CheckedApi {
  schema: GraphQLSchema;
  introspection: boolean;
}

/** Why an operation is refused: the HTTP status and the GraphQL errors clients get. */
export interface Refusal {
  status: number;
  errors: GraphQLFormattedError[];
}

/**
 * Everything the gateway checks of one operation (`query`, `operationName`) a client sends to the
 * API `apiId`, over HTTP or WebSocket: parsed and valid against the schema (else 400 with the
 * validation errors), then (403) introspection the API disables, the key's `max_query_depth` (its
 * access right's `limit.max_query_depth` when it has a per-API limit) and its field permissions
 * (`restricted_types`, `allowed_types`). The document and its operation when it may run.
 */
export function checkOperation(
  api: CheckedApi,
  session: GatewaySession | undefined,
  apiId: string,
  query: string,
  operationName: string | undefined,
): CheckedRequest | Refusal {
  const checked = parseAndValidate(api.schema, query, operationName);
  if (!('document' in checked)) return { status: 400, errors: checked.map((e) => e.toJSON()) };
  const { document, operation } = checked;
  if (!api.introspection) {
    const errors = introspectionErrors(api.schema, document);
    if (errors.length > 0) return { status: 403, errors: errors.map((e) => e.toJSON()) };
  }
  if (session === undefined) return checked;
  const right = session.access_rights?.[apiId];
  // A per-API limit replaces the key's limits whole, its depth included.
  const most = (right?.limit ?? session).max_query_depth ?? -1;
  if (most > 0 && queryDepth(document, operation) > most) {
    return { status: 403, errors: [{ message: 'depth limit exceeded' }] };
  }
  const perms = fieldPermissions(right?.restricted_types, right?.allowed_types);
  const refused = perms === undefined ? undefined : refusedField(api.schema, document, perms);
  if (refused !== undefined) return { status: 403, errors: [refused.error.toJSON()] };
  return checked;
}
