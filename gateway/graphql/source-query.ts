/**
 * What a GraphQL data source is sent for a field the client selected, and how its answer is read
 * back (engine.ts calls both). The client's selection is rewritten level by level, with the
 * schema's types:
 * - a field another source serves (a REST child such as `{{ .object.code }}`'s `restCountry`) is
 *   not sent: its resolver calls that source, and the fields of the parent object its templates
 *   read are asked for instead, under aliases of their own (`_svc_code: code`), whether or not the
 *   client selected them;
 * - aliases are sent as the client wrote them, and each value is read back by the client's response
 *   key, so `who: name` is the name at every level (and `a: f(x: 1) b: f(x: 2)` stay apart);
 * - a field mapped from its parent object (`path`) is asked for as the first key of its path;
 * - fragments are sent inline, `__typename` is asked for on abstract types (the member of each
 *   value), and a selection left empty asks for `__typename` alone.
 * The answer's objects keep their fields by name (what templates read) and carry their values by
 * response key (`answered`), which the engine's resolvers read.
 */
import {
  getNamedType,
  isAbstractType,
  isInterfaceType,
  isObjectType,
  Kind,
  OperationTypeNode,
  print,
  visit,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLNamedType,
  type GraphQLResolveInfo,
  type GraphQLSchema,
  type InlineFragmentNode,
  type SelectionNode,
  type SelectionSetNode,
} from 'graphql';
import { isPlainObject } from '../../lib/plain-object.ts';
import type { EngineField, GraphqlSource } from './sources.ts';

/** The key of the values an object a GraphQL source answered carries by response key. */
const ANSWERED = Symbol('svc.graphql.answered');

/** The values of an object a GraphQL source answered, by the client's response keys. */
export interface Answered {
  /** The source that answered it (a field it also serves is read here, not asked again). */
  source: GraphqlSource;
  values: Readonly<Record<string, unknown>>;
}

/** The values by response key of an object a GraphQL source answered, or undefined for any other value. */
export function answered(value: unknown): Answered | undefined {
  return isPlainObject(value) ? (value as { [ANSWERED]?: Answered })[ANSWERED] : undefined;
}

/** The engine's data graph, as the rewriting reads it. */
export interface Graph {
  schema: GraphQLSchema;
  /** The engine's fields by `Type.field`. */
  fields: ReadonlyMap<string, EngineField>;
}

/** How one response key of an answered object is read. */
interface ReadEntry {
  /** The upstream field's name. */
  field: string;
  /** Asked for a template (not the client): kept by field name only. */
  template: boolean;
  children: ReadPlan | undefined;
}
type ReadPlan = Map<string, ReadEntry>;

/** What is sent for one field, and how its answer is read. */
export interface SourceQuery {
  query: string;
  variables: Record<string, unknown>;
  /** How the field's value is read (undefined for a leaf). */
  plan: ReadPlan | undefined;
}

/** The prefix of the aliases under which the fields templates read are asked for. */
const TEMPLATE_ALIAS = '_svc_';

const name = (value: string): { kind: Kind.NAME; value: string } => ({ kind: Kind.NAME, value });
const selectionSet = (selections: readonly SelectionNode[]): SelectionSetNode => ({
  kind: Kind.SELECTION_SET,
  selections,
});
const TYPENAME_FIELD: FieldNode = { kind: Kind.FIELD, name: name('__typename') };

function mergeEntry(old: ReadEntry | undefined, next: ReadEntry): ReadEntry {
  if (old === undefined) return next;
  if (old.children === undefined || next.children === undefined)
    return { ...next, children: old.children ?? next.children };
  const children = new Map(old.children);
  for (const [k, e] of next.children) children.set(k, mergeEntry(children.get(k), e));
  return { ...next, children };
}

interface Rewrite {
  graph: Graph;
  source: GraphqlSource;
  fragments: Readonly<Record<string, FragmentDefinitionNode>>;
}

const fieldsOf = (type: GraphQLNamedType | undefined) =>
  isObjectType(type) || isInterfaceType(type) ? type.getFields() : undefined;

/** A key path tree of fields templates read (`[[a, b], [a, c], [d]]`: `a { b c } d`). */
type Needs = Map<string, Needs>;

function addNeed(tree: Needs, path: readonly string[]): void {
  const [head, ...rest] = path;
  if (head === undefined) return;
  let sub = tree.get(head);
  if (sub === undefined) {
    sub = new Map<string, Needs>();
    tree.set(head, sub);
  }
  addNeed(sub, rest);
}

/** The fields of `needs` on `type`, plain (no aliases), and how they are read; none that `type` lacks. */
function needSelections(
  r: Rewrite,
  type: GraphQLNamedType,
  needs: Needs,
): { selections: FieldNode[]; plan: ReadPlan } {
  const selections: FieldNode[] = [];
  const plan: ReadPlan = new Map();
  const fields = fieldsOf(type);
  for (const [field, sub] of needs) {
    const def = fields?.[field];
    if (def === undefined) continue;
    const served = r.graph.fields.get(`${type.name}.${field}`)?.source;
    if (served !== undefined && served !== r.source) continue;
    const child = getNamedType(def.type);
    const composite = fieldsOf(child) !== undefined || isAbstractType(child);
    if (composite !== sub.size > 0) continue; // an object read whole, or a key inside a scalar
    const inner = sub.size > 0 ? needSelections(r, child, sub) : undefined;
    if (inner?.selections.length === 0) continue;
    selections.push({
      kind: Kind.FIELD,
      name: name(field),
      ...(inner === undefined ? {} : { selectionSet: selectionSet(inner.selections) }),
    });
    plan.set(field, { field, template: false, children: inner?.plan });
  }
  return { selections, plan };
}

/**
 * The selections of one level sent to the source, filling `plan` with how they are read;
 * `typename` false leaves `__typename` to the client on an abstract type (the level a source's
 * `default_type_name` names).
 */
function rewrite(
  r: Rewrite,
  type: GraphQLNamedType,
  selections: readonly SelectionNode[],
  plan: ReadPlan,
  typename = true,
): SelectionNode[] {
  const out: SelectionNode[] = [];
  const needs: Needs = new Map();
  const plain = new Set<string>();
  const fields = fieldsOf(type);
  const inline = (node: InlineFragmentNode): void => {
    const condition = node.typeCondition?.name.value;
    const t = condition === undefined ? type : r.graph.schema.getType(condition);
    if (t === undefined) return;
    const inner = rewrite(r, t, node.selectionSet.selections, plan, typename);
    out.push({ ...node, selectionSet: selectionSet(inner.length > 0 ? inner : [TYPENAME_FIELD]) });
  };
  for (const sel of selections) {
    if (sel.kind === Kind.INLINE_FRAGMENT) {
      inline(sel);
      continue;
    }
    if (sel.kind === Kind.FRAGMENT_SPREAD) {
      const f = r.fragments[sel.name.value];
      if (f !== undefined) {
        inline({
          kind: Kind.INLINE_FRAGMENT,
          typeCondition: f.typeCondition,
          ...(sel.directives === undefined ? {} : { directives: sel.directives }),
          selectionSet: f.selectionSet,
        });
      }
      continue;
    }
    const fieldName = sel.name.value;
    const key = sel.alias?.value ?? fieldName;
    const engine = r.graph.fields.get(`${type.name}.${fieldName}`);
    if (engine?.source !== undefined && engine.source !== r.source) {
      // Another source serves it: the fields of this object its templates read are asked instead.
      if (engine.source.kind !== 'kafka') for (const p of engine.source.objectFields) addNeed(needs, p);
      continue;
    }
    // A field mapped from its parent object is the first key of its path (the rest read inside it).
    const path = engine?.source === undefined ? engine?.path : undefined;
    const upstream = path?.[0] ?? fieldName;
    const bare = !sel.arguments?.length && !sel.directives?.length && sel.selectionSet === undefined;
    if (key === fieldName && upstream === fieldName && bare) plain.add(fieldName);
    const def = fields?.[fieldName];
    let children: ReadPlan | undefined;
    let set: SelectionSetNode | undefined;
    if (sel.selectionSet !== undefined && def !== undefined) {
      children = new Map();
      const inner = rewrite(r, getNamedType(def.type), sel.selectionSet.selections, children);
      set = selectionSet(inner.length > 0 ? inner : [TYPENAME_FIELD]);
    } else if (sel.selectionSet !== undefined) set = sel.selectionSet;
    for (const p of [...(path ?? []).slice(1)].reverse()) {
      set = selectionSet([
        { kind: Kind.FIELD, name: name(p), ...(set === undefined ? {} : { selectionSet: set }) },
      ]);
      children = new Map([[p, { field: p, template: false, children }]]);
    }
    const { alias: _alias, selectionSet: _set, ...rest } = sel;
    out.push({
      ...rest,
      name: name(upstream),
      ...(key === upstream ? {} : { alias: name(key) }),
      ...(set === undefined ? {} : { selectionSet: set }),
    });
    plan.set(key, mergeEntry(plan.get(key), { field: upstream, template: false, children }));
  }
  const needed = needSelections(r, type, needs);
  for (const node of needed.selections) {
    const field = node.name.value;
    // Selected by the client as it is (no alias, arguments or directives): read by name already.
    if (node.selectionSet === undefined && plain.has(field)) continue;
    let alias = `${TEMPLATE_ALIAS}${field}`;
    while (plan.has(alias)) alias += '_';
    out.push({ ...node, alias: name(alias) });
    plan.set(alias, { field, template: true, children: needed.plan.get(field)?.children });
  }
  if (typename && isAbstractType(type) && plan.get('__typename')?.field !== '__typename') {
    out.push(TYPENAME_FIELD);
    plan.set('__typename', { field: '__typename', template: false, children: undefined });
  }
  return out;
}

/** The query sending `info`'s field (its own name, no alias) to `source`, with the variables it uses. */
export function sourceQuery(info: GraphQLResolveInfo, graph: Graph, source: GraphqlSource): SourceQuery {
  const first = info.fieldNodes[0];
  if (first === undefined) throw new Error('no field to send');
  const selections = info.fieldNodes.flatMap((n) => n.selectionSet?.selections ?? []);
  const r: Rewrite = { graph, source, fragments: info.fragments };
  const plan: ReadPlan | undefined = selections.length > 0 ? new Map() : undefined;
  const type = getNamedType(info.returnType);
  const inner =
    plan === undefined ? [] : rewrite(r, type, selections, plan, source.defaultTypeName === undefined);
  const { alias: _alias, selectionSet: _set, ...rest } = first;
  const node: FieldNode = {
    ...rest,
    ...(plan === undefined
      ? {}
      : { selectionSet: selectionSet(inner.length > 0 ? inner : [TYPENAME_FIELD]) }),
  };
  const vars = new Set<string>();
  visit(node, {
    Variable(v) {
      vars.add(v.name.value);
    },
  });
  const defs = (info.operation.variableDefinitions ?? []).filter((d) => vars.has(d.variable.name.value));
  const header = defs.length === 0 ? '' : `(${defs.map((d) => print(d)).join(', ')})`;
  const opType = info.operation.operation === OperationTypeNode.MUTATION ? 'mutation' : 'query';
  const variables: Record<string, unknown> = {};
  for (const v of vars) if (v in info.variableValues) variables[v] = info.variableValues[v];
  return { query: `${opType}${header} { ${print(node)} }`, variables, plan };
}

/**
 * The value a source answered for a field, as the engine reads it: each object keeps the fields
 * the client selected without an alias and those templates read, by name, and carries every value
 * by response key (`answered`); lists are read item by item.
 */
export function readAnswer(value: unknown, plan: ReadPlan | undefined, source: GraphqlSource): unknown {
  if (plan === undefined) return value;
  if (Array.isArray(value)) return value.map((v) => readAnswer(v, plan, source));
  if (!isPlainObject(value)) return value;
  const byName: Record<string, unknown> = {};
  const values: Record<string, unknown> = {};
  const templated = new Set<string>();
  for (const [key, v] of Object.entries(value)) {
    if (key === '__proto__') continue;
    const entry = plan.get(key);
    const read = readAnswer(v, entry?.children, source);
    if (entry?.template === true) {
      // What a template reads wins over the client's own selection of the same field.
      byName[entry.field] = read;
      templated.add(entry.field);
      continue;
    }
    values[key] = read;
    if ((entry === undefined || entry.field === key) && !templated.has(key)) byName[key] = read;
  }
  return Object.assign(byName, { [ANSWERED]: { source, values } });
}
