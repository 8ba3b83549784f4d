/**
 * GraphQL federation, read once for the webhooks and the gateway: a subgraph's SDL (with the
 * federation directives `@key`, `@external`, `@requires`, `@provides`, `@extends`, `@shareable`)
 * read into what it resolves (`readSubgraph`: the fields it owns, its entities and their keys), a
 * subgraph's servable schema (`buildSubgraphSchema`: the SDL with the federation definitions,
 * `_service` and `_entities`), a supergraph's schema (`buildSupergraphSchema`: the merged SDL,
 * federation directives allowed), and a supergraph composed from its subgraphs
 * (`composeSupergraph`). The API settings of both modes and their rules (`federationProblems`)
 * are graphql-supergraph.ts.
 *
 * What is served: a subgraph API checks queries against its SDL and proxies them to its upstream;
 * a supergraph API plans each query across its subgraphs (root fields from the subgraph owning
 * them, entity fields through `_entities` with the owner's `@key`, the fields a `@requires` names
 * sent in the representation, the fields a `@provides` names asked where provided; a
 * subscription forwarded to the subgraph owning its field). Not served, refused naming the field:
 * entity interfaces, nested keys, and supergraph settings the gateway does not know.
 */
import {
  Kind,
  parse,
  print,
  type ConstDirectiveNode,
  type DefinitionNode,
  type DocumentNode,
  type GraphQLSchema,
  type InterfaceTypeDefinitionNode,
  type InterfaceTypeExtensionNode,
  type ObjectTypeDefinitionNode,
  type ObjectTypeExtensionNode,
  type SelectionSetNode,
} from 'graphql';
import { buildGraphqlSchema, parseGraphql } from './graphql-schema.ts';

/** The federation definitions a subgraph's SDL may use without declaring them. */
const FEDERATION_DEFINITIONS: Record<string, string> = {
  _Any: 'scalar _Any',
  _FieldSet: 'scalar _FieldSet',
  FieldSet: 'scalar FieldSet',
  key: 'directive @key(fields: _FieldSet!, resolvable: Boolean = true) repeatable on OBJECT | INTERFACE',
  external: 'directive @external(reason: String) on FIELD_DEFINITION | OBJECT',
  requires: 'directive @requires(fields: _FieldSet!) on FIELD_DEFINITION',
  provides: 'directive @provides(fields: _FieldSet!) on FIELD_DEFINITION',
  extends: 'directive @extends on OBJECT | INTERFACE',
  shareable: 'directive @shareable repeatable on OBJECT | FIELD_DEFINITION',
  inaccessible:
    'directive @inaccessible on FIELD_DEFINITION | OBJECT | INTERFACE | UNION | ARGUMENT_DEFINITION | SCALAR | ENUM | ENUM_VALUE | INPUT_OBJECT | INPUT_FIELD_DEFINITION',
  override: 'directive @override(from: String!) on FIELD_DEFINITION',
  tag: 'directive @tag(name: String!) repeatable on FIELD_DEFINITION | OBJECT | INTERFACE | UNION | ARGUMENT_DEFINITION | SCALAR | ENUM | ENUM_VALUE | INPUT_OBJECT | INPUT_FIELD_DEFINITION',
};

/** What one subgraph resolves, read from its SDL. */
export interface SubgraphModel {
  /** The fields it resolves itself, by type (`@external` fields left out). */
  owns: ReadonlyMap<string, ReadonlySet<string>>;
  /** Its entities: each type's `@key` field sets (a selection set each). */
  keys: ReadonlyMap<string, readonly SelectionSetNode[]>;
  /**
   * Fields with `@requires` (`Type.field`), with the fields of the entity they need (`@external`
   * here, resolved by another subgraph): the planner fetches those first and sends them in the
   * entity's representation.
   */
  requires: ReadonlyMap<string, SelectionSetNode>;
  /**
   * Fields with `@provides` (`Type.field`), with the fields of the entity they return that this
   * subgraph resolves at that path (`@external` elsewhere in its SDL): the planner asks them here
   * instead of from their owner.
   */
  provides: ReadonlyMap<string, SelectionSetNode>;
  /** Interfaces with a `@key` (entity interfaces), which the planner does not serve. */
  keyedInterfaces: readonly string[];
  /** Types with a `@key` of nested fields, which the planner does not serve. */
  nestedKeys: readonly string[];
}

type ObjectNode =
  | ObjectTypeDefinitionNode
  | ObjectTypeExtensionNode
  | InterfaceTypeDefinitionNode
  | InterfaceTypeExtensionNode;

/** An object or interface type of an SDL (both hold fields a subgraph resolves). */
const isObjectNode = (d: DefinitionNode): d is ObjectNode =>
  d.kind === Kind.OBJECT_TYPE_DEFINITION ||
  d.kind === Kind.OBJECT_TYPE_EXTENSION ||
  d.kind === Kind.INTERFACE_TYPE_DEFINITION ||
  d.kind === Kind.INTERFACE_TYPE_EXTENSION;

const isInterfaceNode = (d: ObjectNode): boolean =>
  d.kind === Kind.INTERFACE_TYPE_DEFINITION || d.kind === Kind.INTERFACE_TYPE_EXTENSION;

const hasDirective = (node: { directives?: readonly { name: { value: string } }[] }, name: string) =>
  (node.directives ?? []).some((d) => d.name.value === name);

/** The `fields` argument of a `@key` as a selection set, or undefined. */
function keySelection(node: ObjectNode): SelectionSetNode[] {
  const out: SelectionSetNode[] = [];
  for (const d of node.directives ?? []) {
    if (d.name.value !== 'key') continue;
    const resolvable = d.arguments?.find((a) => a.name.value === 'resolvable');
    if (resolvable?.value.kind === Kind.BOOLEAN && !resolvable.value.value) continue;
    const fields = d.arguments?.find((a) => a.name.value === 'fields');
    if (fields?.value.kind !== Kind.STRING) continue;
    const op = parse(`{ ${fields.value.value} }`).definitions[0];
    if (op?.kind === Kind.OPERATION_DEFINITION) out.push(op.selectionSet);
  }
  return out;
}

/** The `fields` of a field's `@requires` or `@provides` as a selection set, or undefined. */
function fieldSetOf(
  node: { directives?: readonly ConstDirectiveNode[] },
  name: 'requires' | 'provides',
): SelectionSetNode | undefined {
  const d = (node.directives ?? []).find((x) => x.name.value === name);
  const fields = d?.arguments?.find((a) => a.name.value === 'fields');
  if (fields?.value.kind !== Kind.STRING) return undefined;
  const op = parse(`{ ${fields.value.value} }`).definitions[0];
  return op?.kind === Kind.OPERATION_DEFINITION ? op.selectionSet : undefined;
}

/** Reads a subgraph's SDL; a string says why it can't be read. */
export function readSubgraph(sdl: string): SubgraphModel | string {
  const doc = parseGraphql(sdl);
  if (typeof doc === 'string') return doc;
  const owns = new Map<string, Set<string>>();
  const keys = new Map<string, SelectionSetNode[]>();
  const requires = new Map<string, SelectionSetNode>();
  const provides = new Map<string, SelectionSetNode>();
  const keyedInterfaces: string[] = [];
  const nestedKeys: string[] = [];
  try {
    for (const d of doc.definitions) {
      if (!isObjectNode(d)) continue;
      const type = d.name.value;
      const k = keySelection(d);
      if (k.length > 0 && isInterfaceNode(d)) keyedInterfaces.push(type);
      else if (k.length > 0) keys.set(type, [...(keys.get(type) ?? []), ...k]);
      if (k.some((set) => set.selections.some((x) => x.kind !== Kind.FIELD || x.selectionSet !== undefined)))
        nestedKeys.push(type);
      if (hasDirective(d, 'external')) continue;
      const set = owns.get(type) ?? new Set<string>();
      owns.set(type, set);
      for (const f of d.fields ?? []) {
        const needs = fieldSetOf(f, 'requires');
        if (needs !== undefined) requires.set(`${type}.${f.name.value}`, needs);
        const gives = fieldSetOf(f, 'provides');
        if (gives !== undefined) provides.set(`${type}.${f.name.value}`, gives);
        if (!hasDirective(f, 'external')) set.add(f.name.value);
      }
    }
  } catch (err) {
    return `a @key, @requires or @provides does not parse: ${err instanceof Error ? err.message : String(err)}`;
  }
  return { owns, keys, requires, provides, keyedInterfaces, nestedKeys };
}

/**
 * The SDL as graphql-js builds it: the federation definitions it uses added, `extend schema`
 * (Federation 2's `@link`) left out, and an extension of a type the SDL does not define read as
 * its definition (a subgraph extends types other subgraphs define).
 */
function servableSdl(doc: DocumentNode, extra: readonly string[]): DocumentNode {
  const defined = new Set<string>();
  for (const d of doc.definitions) {
    if ('name' in d && d.name !== undefined && !d.kind.endsWith('Extension')) defined.add(d.name.value);
  }
  const definitions: DefinitionNode[] = [];
  for (const d of doc.definitions) {
    if (d.kind === Kind.SCHEMA_EXTENSION) continue;
    if (d.kind === Kind.OBJECT_TYPE_EXTENSION && !defined.has(d.name.value)) {
      defined.add(d.name.value);
      definitions.push({ ...d, kind: Kind.OBJECT_TYPE_DEFINITION });
      continue;
    }
    if (d.kind === Kind.INTERFACE_TYPE_EXTENSION && !defined.has(d.name.value)) {
      defined.add(d.name.value);
      definitions.push({ ...d, kind: Kind.INTERFACE_TYPE_DEFINITION });
      continue;
    }
    definitions.push(d);
  }
  const declared = new Set(
    doc.definitions.flatMap((d) => (d.kind === Kind.DIRECTIVE_DEFINITION ? [d.name.value] : [])),
  );
  const fed = Object.entries(FEDERATION_DEFINITIONS)
    .filter(([name]) => !declared.has(name) && !defined.has(name))
    .map(([, def]) => def);
  // The SDL's own nodes keep their places in its text: a problem in them is at the user's line.
  const added = [...fed, ...extra];
  return {
    kind: Kind.DOCUMENT,
    definitions: [...definitions, ...(added.length === 0 ? [] : parse(added.join('\n')).definitions)],
  };
}

/** A subgraph's servable schema: its SDL with `_service` and `_entities`, or the first problem. */
export function buildSubgraphSchema(sdl: string): GraphQLSchema | string {
  const doc = parseGraphql(sdl);
  if (typeof doc === 'string') return doc;
  const read = readSubgraph(sdl);
  if (typeof read === 'string') return read;
  const entities = [...read.keys.keys()];
  const hasQuery = doc.definitions.some((d) => isObjectNode(d) && d.name.value === 'Query');
  const extra = ['type _Service { sdl: String }'];
  const fields = ['_service: _Service!'];
  if (entities.length > 0) {
    extra.push(`union _Entity = ${entities.join(' | ')}`);
    fields.push('_entities(representations: [_Any!]!): [_Entity]!');
  }
  extra.push(`${hasQuery ? 'extend type' : 'type'} Query { ${fields.join(' ')} }`);
  return buildGraphqlSchema(servableSdl(doc, extra));
}

/** A supergraph's schema from its merged SDL (federation directives allowed), or the first problem. */
export function buildSupergraphSchema(sdl: string): GraphQLSchema | string {
  const doc = parseGraphql(sdl);
  if (typeof doc === 'string') return doc;
  return buildGraphqlSchema(servableSdl(doc, []));
}

/** The definitions federation adds to a subgraph, never part of the supergraph. */
const FEDERATION_TYPES = new Set([
  '_Any',
  '_FieldSet',
  'FieldSet',
  '_Service',
  '_Entity',
  'link__Import',
  'link__Purpose',
]);

/** Federation's directives, left out of the composed schema. */
const FEDERATION_DIRECTIVES = new Set([
  ...Object.keys(FEDERATION_DEFINITIONS),
  'link',
  'composeDirective',
  'interfaceObject',
]);

/** One reason the subgraphs do not compose: the field (`Type.field`) when it is about one, and the subgraphs involved. */
export interface CompositionError {
  field?: string;
  subgraphs: string[];
  message: string;
}

/** `Type.field: message`, or `message`. */
export const compositionErrorText = (e: CompositionError): string =>
  e.field === undefined ? e.message : `${e.field}: ${e.message}`;

/**
 * Composes the supergraph's schema from its subgraphs' SDLs (`sdls`, by subgraph name): each
 * type once, the fields of an object or interface type united (a field `@external` in a subgraph
 * comes from the one resolving it), union members and enum values united, federation's own types,
 * fields (`_entities`, `_service`) and directives left out. A field two subgraphs give different
 * types is an error naming both: `{ errors }`, else `{ sdl }`.
 */
export function composeSupergraph(
  sdls: readonly { name: string; sdl: string }[],
): { sdl: string } | { errors: CompositionError[] } {
  const errors: CompositionError[] = [];
  interface Composed {
    /** The first definition or extension of the name, printed as a definition when not composed. */
    first: DefinitionNode;
    fields: Map<string, { text: string; type: string; from: string }>;
    /** Interfaces, union members or enum values. */
    members: Set<string>;
  }
  const types = new Map<string, Composed>();
  const strip = <T extends { readonly directives?: readonly { name: { value: string } }[] }>(n: T): T => ({
    ...n,
    directives: (n.directives ?? []).filter((d) => !FEDERATION_DIRECTIVES.has(d.name.value)),
  });
  for (const { name, sdl } of sdls) {
    const doc = parseGraphql(sdl);
    if (typeof doc === 'string') {
      errors.push({ subgraphs: [name], message: `subgraph ${name}: ${doc}` });
      continue;
    }
    for (const d of doc.definitions) {
      if (!('name' in d) || d.name === undefined) continue;
      const typeName = d.name.value;
      if (
        d.kind === Kind.DIRECTIVE_DEFINITION
          ? FEDERATION_DIRECTIVES.has(typeName)
          : FEDERATION_TYPES.has(typeName)
      )
        continue;
      const key = d.kind === Kind.DIRECTIVE_DEFINITION ? `@${typeName}` : typeName;
      const t: Composed = types.get(key) ?? { first: d, fields: new Map(), members: new Set<string>() };
      types.set(key, t);
      if (isObjectNode(d)) {
        for (const i of d.interfaces ?? []) t.members.add(i.name.value);
        for (const f of d.fields ?? []) {
          if (typeName === 'Query' && (f.name.value === '_entities' || f.name.value === '_service')) continue;
          if (hasDirective(f, 'external')) continue;
          const before = t.fields.get(f.name.value);
          const type = print(f.type);
          if (before === undefined) t.fields.set(f.name.value, { text: print(strip(f)), type, from: name });
          else if (before.type !== type)
            errors.push({
              field: `${typeName}.${f.name.value}`,
              subgraphs: [before.from, name],
              message: `subgraph ${before.from} gives it the type ${before.type}, subgraph ${name} ${type}`,
            });
        }
      } else if (d.kind === Kind.UNION_TYPE_DEFINITION || d.kind === Kind.UNION_TYPE_EXTENSION) {
        for (const m of d.types ?? []) t.members.add(m.name.value);
      } else if (d.kind === Kind.ENUM_TYPE_DEFINITION || d.kind === Kind.ENUM_TYPE_EXTENSION) {
        for (const v of d.values ?? []) t.members.add(print(strip(v)));
      }
    }
  }
  if (errors.length > 0) return { errors };
  const out: string[] = [];
  for (const t of types.values()) {
    const d = t.first;
    if (!('name' in d) || d.name === undefined) continue;
    const name = d.name.value;
    if (isObjectNode(d)) {
      if (t.fields.size === 0) continue;
      const word = isInterfaceNode(d) ? 'interface' : 'type';
      const impl = t.members.size > 0 ? ` implements ${[...t.members].join(' & ')}` : '';
      const fields = [...t.fields.values()].map((f) => `  ${f.text}`).join('\n');
      out.push(`${word} ${name}${impl} {\n${fields}\n}`);
    } else if (d.kind === Kind.UNION_TYPE_DEFINITION || d.kind === Kind.UNION_TYPE_EXTENSION) {
      out.push(`union ${name} = ${[...t.members].join(' | ')}`);
    } else if (d.kind === Kind.ENUM_TYPE_DEFINITION || d.kind === Kind.ENUM_TYPE_EXTENSION) {
      out.push(`enum ${name} {\n${[...t.members].map((v) => `  ${v}`).join('\n')}\n}`);
    } else {
      out.push(print(strip(d)).replace(/^extend /, ''));
    }
  }
  return { sdl: out.join('\n\n') };
}
