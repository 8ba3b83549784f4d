/**
 * The execution engine's one model of a data graph, read from either form an API definition may
 * write it in, so every feature of the engine works in both:
 * - version 1, `graphql.type_field_configurations`: a data source and a mapping per field
 *   (`HTTPJSONDataSource`, `GraphQLDataSource`; `mapping.path` a dot path);
 * - version 2 (`graphql.version: "2"`), `graphql.engine`: data sources of kind `REST` and
 *   `GraphQL`, and `Kafka` (subscription fields fed by topics), each serving the fields of its `root_fields`, `field_configs` mapping fields (a key
 *   path; by default the key of the field's own name, as the reference's engine reads it), and
 *   `global_headers` sent to every source.
 * The rules in schemas/rules/graphql.ts refuse what this model cannot hold (Kafka's SASL, other
 * balance strategies and isolation levels among them), so what is read here is what was admitted.
 */
import type {
  GraphqlConfig,
  GraphqlEngineConfig,
  GraphqlEngineDataSourceConfig,
  TypeFieldConfiguration,
} from '../../schemas/generated/models.ts';
import { KAFKA_VERSION } from '../../schemas/rules/graphql.ts';

/** An HTTP call answering JSON (v1 `HTTPJSONDataSource`, v2 `REST`). */
export interface RestSource {
  kind: 'rest';
  method: string;
  /** May hold `{{ .object.x }}` and `{{ .arguments.y }}` templates, as may the values below. */
  url: string;
  headers: Readonly<Record<string, string>>;
  /** Query parameters added to the URL. */
  query: readonly { name: string; value: string }[];
  body: string | undefined;
  /** The member of an abstract type a successful answer is. */
  defaultTypeName: string | undefined;
  /** The member of an abstract type an answer with this status is (any status, errors too). */
  typeByStatus: ReadonlyMap<number, string>;
  /** The key paths of the parent object its templates read (`{{ .object.a.b }}`: `[a, b]`). */
  objectFields: readonly (readonly string[])[];
}

/** Another GraphQL server (v1 `GraphQLDataSource`, v2 `GraphQL`). */
export interface GraphqlSource {
  kind: 'graphql';
  /** GET sends the query in the URL; any other method a JSON body. */
  method: string;
  url: string;
  headers: Readonly<Record<string, string>>;
  /**
   * A fixed operation sent instead of the client's selection, with its variables (strings may
   * hold templates); undefined sends the field with its sub-selection and the variables it uses.
   */
  operation: { query: string; variables: Readonly<Record<string, unknown>> } | undefined;
  /** How the source serves subscriptions (v2 `subscription_type`; empty: graphql-transport-ws). */
  subscriptionType: string;
  /** The object type a value without `__typename` is, for a field of an abstract type (v2 `default_type_name`). */
  defaultTypeName?: string | undefined;
  /** The key paths of the parent object its templates read (`{{ .object.a.b }}`: `[a, b]`). */
  objectFields: readonly (readonly string[])[];
}

/**
 * Kafka topics feeding a subscription field (v2 `Kafka`): each subscription is one consumer of
 * the group, through the gateway's stream processor (kafka.ts); each message is the source's
 * answer for one event.
 */
export interface KafkaSource {
  kind: 'kafka';
  brokers: readonly string[];
  /** May hold `{{ .arguments.x }}` templates, as may `clientId`. */
  topics: readonly string[];
  groupId: string;
  clientId: string;
  /** The stream processor's form of the protocol version (`2.8.0`), or undefined for its default. */
  version: string | undefined;
  startFromOldest: boolean;
}

/** Where one field's data comes from. */
export type EngineSource = RestSource | GraphqlSource | KafkaSource;

/** One field of the graph the engine resolves itself. */
export interface EngineField {
  typeName: string;
  fieldName: string;
  /**
   * Key path of the field's value: in what its source answered (a REST body; a GraphQL answer's
   * `data`), or in its parent object when it has no source. Undefined takes the value whole.
   */
  path: readonly string[] | undefined;
  source: EngineSource | undefined;
}

/**
 * The reference's `V2_8_0_0` as the stream processor's consumer (sarama) reads a version: three
 * parts from 1.0 on (`2.8.0`), four before (`0.10.2.0`).
 */
function kafkaVersion(parts: number[]): string {
  return (parts[0] ?? 0) >= 1 ? parts.slice(0, 3).join('.') : parts.join('.');
}

const OBJECT_TEMPLATE = /\{\{\s*\.?object((?:\.[A-Za-z_][A-Za-z0-9_]*)+)\s*\}\}/g;

/**
 * The key paths of the parent object that templates in `values` (strings, or objects and lists of
 * them) read: what a GraphQL source serving the parent must be asked for when the client did not
 * select it (engine.ts), each path once.
 */
export function objectFieldsOf(...values: unknown[]): string[][] {
  const seen = new Map<string, string[]>();
  const walk = (v: unknown): void => {
    if (typeof v === 'string') {
      for (const m of v.matchAll(OBJECT_TEMPLATE)) {
        const path = (m[1] ?? '').slice(1).split('.');
        seen.set(path.join('.'), path);
      }
    } else if (Array.isArray(v)) v.forEach(walk);
    else if (v !== null && typeof v === 'object') Object.values(v).forEach(walk);
  };
  values.forEach(walk);
  return [...seen.values()];
}

const dotPath = (path: string | undefined): string[] | undefined =>
  path === undefined || path === '' ? undefined : path.split('.');

/** Version 1: `type_field_configurations`. */
function fromVersion1(fields: readonly TypeFieldConfiguration[]): EngineField[] {
  return fields.map((f): EngineField => {
    const path = f.mapping?.disabled === true ? undefined : dotPath(f.mapping?.path);
    const ds = f.data_source;
    const base = { typeName: f.type_name, fieldName: f.field_name };
    if (ds === undefined) return { ...base, path, source: undefined };
    const c = ds.data_source_config;
    if (ds.kind === 'GraphQLDataSource') {
      // A GraphQL answer holds the field under its own name; the mapping reads inside it.
      return {
        ...base,
        path: [f.field_name, ...(path ?? [])],
        source: {
          kind: 'graphql',
          method: c.method ?? 'POST',
          url: c.url,
          headers: c.headers ?? {},
          operation: undefined,
          subscriptionType: '',
          objectFields: objectFieldsOf(c.url, c.headers),
        },
      };
    }
    return {
      ...base,
      path,
      source: {
        kind: 'rest',
        method: c.method ?? 'GET',
        url: c.url,
        headers: c.headers ?? {},
        query: [],
        body: c.body === '' ? undefined : c.body,
        defaultTypeName: c.default_type_name,
        objectFields: objectFieldsOf(c.url, c.headers, c.body),
        typeByStatus: new Map(
          (c.status_code_type_name_mappings ?? []).flatMap((m) =>
            m.type_name === undefined || m.type_name === '' ? [] : [[m.status_code, m.type_name] as const],
          ),
        ),
      },
    };
  });
}

/** Headers of a source over the global ones (a source's header wins, whatever its case). */
function withGlobal(
  global: readonly { key?: string; value?: string }[],
  own: Readonly<Record<string, string>> | undefined,
): Record<string, string> {
  const out: Record<string, string> = {};
  const ownNames = new Set(Object.keys(own ?? {}).map((k) => k.toLowerCase()));
  for (const h of global) {
    if (h.key !== undefined && h.key !== '' && !ownNames.has(h.key.toLowerCase())) out[h.key] = h.value ?? '';
  }
  return { ...out, ...own };
}

function v2Source(
  kind: string,
  c: GraphqlEngineDataSourceConfig,
  global: readonly { key?: string; value?: string }[],
): EngineSource | undefined {
  const headers = withGlobal(global, c.headers);
  /** What every source's request has: its method (`fallback` when unset), URL and headers. */
  const request = (fallback: string) => ({
    method: c.method === undefined || c.method === '' ? fallback : c.method.toUpperCase(),
    url: c.url ?? '',
    headers,
  });
  if (kind === 'REST') {
    return {
      kind: 'rest',
      ...request('GET'),
      query: (c.query ?? []).map((q) => ({ name: q.name, value: q.value ?? '' })),
      body: c.body === '' ? undefined : c.body,
      defaultTypeName: undefined,
      typeByStatus: new Map(),
      objectFields: objectFieldsOf(c.url, headers, c.query, c.body),
    };
  }
  if (kind === 'GraphQL') {
    return {
      kind: 'graphql',
      ...request('POST'),
      operation:
        c.has_operation === true ? { query: c.operation ?? '', variables: c.variables ?? {} } : undefined,
      subscriptionType: c.subscription_type ?? '',
      defaultTypeName: c.default_type_name === '' ? undefined : c.default_type_name,
      objectFields: objectFieldsOf(c.url, headers, c.has_operation === true ? c.variables : undefined),
    };
  }
  if (kind === 'Kafka') {
    const v = KAFKA_VERSION.exec(c.kafka_version ?? '');
    return {
      kind: 'kafka',
      brokers: c.broker_addresses ?? [],
      topics: c.topics ?? [],
      groupId: c.group_id ?? '',
      clientId: c.client_id ?? '',
      version: v === null ? undefined : kafkaVersion(v.slice(1).map(Number)),
      startFromOldest: c.start_consuming_latest !== true,
    };
  }
  return undefined;
}

/** Version 2: `engine.data_sources` and `engine.field_configs`. */
function fromVersion2(engine: GraphqlEngineConfig): EngineField[] {
  const key = (t: string, f: string): string => `${t}.${f}`;
  const mapping = new Map((engine.field_configs ?? []).map((fc) => [key(fc.type_name, fc.field_name), fc]));
  // The reference's engine reads the key named as the field unless told otherwise.
  const pathOf = (t: string, f: string): string[] | undefined => {
    const fc = mapping.get(key(t, f));
    const path = fc?.path ?? [];
    if (path.length > 0) return path;
    return fc?.disable_default_mapping === true ? undefined : [f];
  };
  const global = engine.global_headers ?? [];
  const out: EngineField[] = [];
  const served = new Set<string>();
  for (const ds of engine.data_sources ?? []) {
    const source = v2Source(ds.kind, ds.config ?? {}, global);
    if (source === undefined) continue;
    for (const rf of ds.root_fields ?? []) {
      for (const f of rf.fields) {
        served.add(key(rf.type, f));
        out.push({ typeName: rf.type, fieldName: f, path: pathOf(rf.type, f), source });
      }
    }
  }
  // A mapped field without a source reads its parent object.
  for (const fc of engine.field_configs ?? []) {
    if (served.has(key(fc.type_name, fc.field_name))) continue;
    out.push({
      typeName: fc.type_name,
      fieldName: fc.field_name,
      path: pathOf(fc.type_name, fc.field_name),
      source: undefined,
    });
  }
  return out;
}

/** Whether the API writes its data graph in the version 2 form. */
export const isVersion2 = (g: GraphqlConfig): boolean => g.version === '2';

/** The engine's fields of an API's GraphQL settings, from whichever form it writes. */
export function engineFields(g: GraphqlConfig): EngineField[] {
  return isVersion2(g) ? fromVersion2(g.engine ?? {}) : fromVersion1(g.type_field_configurations ?? []);
}
