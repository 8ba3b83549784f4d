/**
 * A supergraph API (`execution_mode: supergraph`) answers each query across its subgraphs
 * (schemas/rules/graphql-federation.ts reads what each resolves from its SDL):
 * 1. the root fields go to the subgraph owning each (one request per subgraph for a query, one
 *    per field in order for a mutation), each with the part of its selection that subgraph
 *    resolves, plus `__typename` and the `@key` fields of every entity in it;
 * 2. level by level, the fields of an entity that another subgraph resolves are fetched from it
 *    through `_entities(representations: [...])` (`__typename` and that subgraph's key), one call
 *    per subgraph, type and selection for every object of the level (batched), and merged in;
 *    a field with `@requires` gets the fields it names in its representation (asked along from
 *    the subgraph that gave the object, or first from their owner, the field at the next round);
 *    a field with `@provides` has the fields it provides asked of its subgraph, not their owner;
 * 3. graphql-js executes the client's document over the merged answer (values completed and
 *    checked against the supergraph's schema, abstract types by `__typename`).
 * A subscription is forwarded over WebSocket to the subgraph owning its field (`subscribe`), and
 * each of its events is completed as a query's root answer is (steps 2 and 3).
 * A subgraph's error is a GraphQL error of the answer (with the subgraph's name); the fields it
 * would have given are null (or their parent, when not nullable), never a 500.
 */
import {
  execute,
  getNamedType,
  GraphQLError,
  GraphQLIncludeDirective,
  GraphQLSkipDirective,
  isCompositeType,
  isInterfaceType,
  isObjectType,
  Kind,
  OperationTypeNode,
  print,
  visit,
  type DocumentNode,
  type ExecutionResult,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLObjectType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionNode,
  type SelectionSetNode,
} from 'graphql';
import { getDirectiveValues } from 'graphql/execution/values.js';
import { isPlainObject } from '../../lib/plain-object.ts';
import type { SupergraphSubgraph } from '../../schemas/rules/graphql-supergraph.ts';
import { callSource, type EngineContext } from './engine.ts';

type Obj = Record<string, unknown>;
type Vars = Readonly<Record<string, unknown>>;

const TYPENAME: FieldNode = { kind: Kind.FIELD, name: { kind: Kind.NAME, value: '__typename' } };

const responseKey = (f: FieldNode): string => f.alias?.value ?? f.name.value;

/** Fragment spreads replaced by inline fragments, so each selection set stands alone. */
function inlineFragments(
  set: SelectionSetNode,
  fragments: Readonly<Record<string, FragmentDefinitionNode>>,
): SelectionSetNode {
  const selections: SelectionNode[] = set.selections.map((s): SelectionNode => {
    if (s.kind === Kind.FRAGMENT_SPREAD) {
      const f = fragments[s.name.value];
      if (f === undefined) return s;
      return {
        kind: Kind.INLINE_FRAGMENT,
        typeCondition: f.typeCondition,
        directives: s.directives ?? [],
        selectionSet: inlineFragments(f.selectionSet, fragments),
      };
    }
    if (s.selectionSet === undefined) return s;
    return { ...s, selectionSet: inlineFragments(s.selectionSet, fragments) };
  });
  return { kind: Kind.SELECTION_SET, selections };
}

function included(node: SelectionNode, vars: Vars): boolean {
  if (getDirectiveValues(GraphQLSkipDirective, node, vars)?.if === true) return false;
  return getDirectiveValues(GraphQLIncludeDirective, node, vars)?.if !== false;
}

/** Whether an inline fragment's type condition covers the object type `t`. */
function applies(schema: GraphQLSchema, cond: string | undefined, t: GraphQLObjectType): boolean {
  if (cond === undefined || cond === t.name) return true;
  const c = schema.getType(cond);
  return c !== undefined && isCompositeType(c) && !isObjectType(c) && schema.isSubType(c, t);
}

/** The fields a selection set asks of an object of type `t` (inline fragments flattened). */
function fieldsFor(
  schema: GraphQLSchema,
  t: GraphQLObjectType,
  set: SelectionSetNode,
  vars: Vars,
): FieldNode[] {
  const out: FieldNode[] = [];
  for (const s of set.selections) {
    if (!included(s, vars)) continue;
    if (s.kind === Kind.FIELD) out.push(s);
    else if (s.kind === Kind.INLINE_FRAGMENT && applies(schema, s.typeCondition?.name.value, t))
      out.push(...fieldsFor(schema, t, s.selectionSet, vars));
  }
  return out;
}

/** The field named `name` of a selection set (a `@provides` field set), or undefined. */
function fieldIn(set: SelectionSetNode | undefined, name: string): FieldNode | undefined {
  return set?.selections.find((x): x is FieldNode => x.kind === Kind.FIELD && x.name.value === name);
}

/** The values of `selections` in `value` (a `@requires` field set), nested objects and lists kept to their selection. */
function picked(value: unknown, selections: readonly SelectionNode[]): Obj {
  const out: Obj = {};
  if (!isPlainObject(value)) return out;
  if (typeof value.__typename === 'string') out.__typename = value.__typename;
  for (const s of selections) {
    if (s.kind !== Kind.FIELD) continue;
    const v = value[s.name.value];
    if (s.selectionSet === undefined || v === null || v === undefined) out[s.name.value] = v;
    else {
      const inner = s.selectionSet.selections;
      out[s.name.value] = Array.isArray(v) ? v.map((x) => picked(x, inner)) : picked(v, inner);
    }
  }
  return out;
}

/** One planner per supergraph API, built when the route compiles. */
export class Supergraph {
  readonly #schema: GraphQLSchema;
  readonly #subgraphs: readonly SupergraphSubgraph[];
  /** `disable_query_batching`: one `_entities` call per object instead of one per level. */
  readonly #batching: boolean;

  constructor(schema: GraphQLSchema, subgraphs: readonly SupergraphSubgraph[], batching = true) {
    this.#schema = schema;
    this.#subgraphs = subgraphs;
    this.#batching = batching;
  }

  /** The subgraph resolving `type.field`, `prefer` first. */
  #owner(type: string, field: string, prefer?: SupergraphSubgraph): SupergraphSubgraph | undefined {
    if (prefer?.model.owns.get(type)?.has(field) === true) return prefer;
    return this.#subgraphs.find((s) => s.model.owns.get(type)?.has(field) === true);
  }

  /**
   * The part of `set` (on `typeName`) that `sub` resolves, with `__typename` and the key fields of
   * every entity it returns, so the other subgraphs' fields can be fetched next.
   */
  #selectionFor(
    sub: SupergraphSubgraph,
    typeName: string,
    set: SelectionSetNode,
    typename = true,
    /** What `@provides` lets `sub` resolve here (the fields it provides at this path). */
    provided?: SelectionSetNode,
  ): SelectionSetNode {
    const type = this.#schema.getType(typeName);
    const selections: SelectionNode[] = typename ? [TYPENAME] : [];
    const resolves = (name: string): boolean =>
      sub.model.owns.get(typeName)?.has(name) === true || fieldIn(provided, name) !== undefined;
    for (const s of set.selections) {
      if (s.kind === Kind.FIELD) {
        if (s.name.value === '__typename') continue;
        if (!(isObjectType(type) || isInterfaceType(type)) || !resolves(s.name.value)) {
          selections.push(...this.#requiredBy(sub, typeName, s.name.value, selections));
          continue;
        }
        const fieldType = type.getFields()[s.name.value]?.type;
        if (s.selectionSet === undefined || fieldType === undefined) selections.push(s);
        else
          selections.push({
            ...s,
            selectionSet: this.#selectionFor(
              sub,
              getNamedType(fieldType).name,
              s.selectionSet,
              true,
              fieldIn(provided, s.name.value)?.selectionSet ??
                sub.model.provides.get(`${typeName}.${s.name.value}`),
            ),
          });
      } else if (s.kind === Kind.INLINE_FRAGMENT) {
        const on = s.typeCondition?.name.value ?? typeName;
        selections.push({ ...s, selectionSet: this.#selectionFor(sub, on, s.selectionSet, true, provided) });
      }
    }
    // The keys of this type that the subgraph resolves, or knows as its own key of the entity
    // (`@external` key fields of a reference): a representation for the others.
    const knows = (name: string): boolean =>
      sub.model.owns.get(typeName)?.has(name) === true ||
      (sub.model.keys.get(typeName) ?? []).some((key) =>
        key.selections.some((k) => k.kind === Kind.FIELD && k.name.value === name),
      );
    for (const other of this.#subgraphs) {
      for (const key of other.model.keys.get(typeName) ?? []) {
        for (const k of key.selections) {
          if (k.kind !== Kind.FIELD || !knows(k.name.value)) continue;
          if (selections.some((x) => x.kind === Kind.FIELD && responseKey(x) === k.name.value)) continue;
          selections.push(k);
        }
      }
    }
    return { kind: Kind.SELECTION_SET, selections };
  }

  /**
   * The fields `sub` resolves of what the owner of `typeName.field` (another subgraph) needs for
   * it (`@requires`), not yet in `selections`: asked along, so they are in the representation.
   */
  #requiredBy(
    sub: SupergraphSubgraph,
    typeName: string,
    field: string,
    selections: readonly SelectionNode[],
  ): FieldNode[] {
    const owner = this.#owner(typeName, field);
    const needs = owner?.model.requires.get(`${typeName}.${field}`);
    if (owner === undefined || owner === sub || needs === undefined) return [];
    return needs.selections.filter(
      (r): r is FieldNode =>
        r.kind === Kind.FIELD &&
        sub.model.owns.get(typeName)?.has(r.name.value) === true &&
        !selections.some((x) => x.kind === Kind.FIELD && responseKey(x) === r.name.value),
    );
  }

  /** Sends one operation to a subgraph; its errors join `errors`. */
  async #send(
    ctx: EngineContext,
    sub: SupergraphSubgraph,
    query: string,
    variables: Obj,
    errors: GraphQLError[],
  ): Promise<Obj | undefined> {
    let answer;
    try {
      answer = await callSource(ctx, {
        method: 'POST',
        url: sub.url,
        headers: { ...sub.headers, 'content-type': 'application/json' },
        body: JSON.stringify({ query, variables }),
      });
    } catch (err) {
      errors.push(
        new GraphQLError(`subgraph ${sub.name}: ${err instanceof Error ? err.message : String(err)}`),
      );
      return undefined;
    }
    const res = answer.body as { data?: Obj | null; errors?: { message?: string }[] } | undefined;
    for (const e of res?.errors ?? [])
      errors.push(new GraphQLError(`subgraph ${sub.name}: ${e.message ?? 'error'}`));
    if (!isPlainObject(res?.data)) {
      if ((res?.errors ?? []).length === 0)
        errors.push(new GraphQLError(`subgraph ${sub.name} answered ${answer.status}`));
      return undefined;
    }
    return res.data;
  }

  /** The operation text sending `selections`, with the definitions of the variables it uses. */
  #operation(op: OperationDefinitionNode, kind: string, selections: SelectionSetNode, extra = ''): string {
    const used = new Set<string>();
    visit(selections, {
      Variable(v) {
        used.add(v.name.value);
      },
    });
    const defs = (op.variableDefinitions ?? [])
      .filter((d) => used.has(d.variable.name.value))
      .map((d) => print(d));
    if (extra !== '') defs.unshift(extra);
    return `${kind}${defs.length > 0 ? `(${defs.join(', ')})` : ''} ${print(selections)}`;
  }

  /** Answers one checked operation of the client. */
  async run(
    ctx: EngineContext,
    document: DocumentNode,
    op: OperationDefinitionNode,
    variables: Obj | undefined,
  ): Promise<ExecutionResult> {
    const errors: GraphQLError[] = [];
    const fragments: Record<string, FragmentDefinitionNode> = {};
    for (const d of document.definitions)
      if (d.kind === Kind.FRAGMENT_DEFINITION) fragments[d.name.value] = d;
    const vars = variables ?? {};
    const mutation = op.operation === OperationTypeNode.MUTATION;
    const root = mutation ? this.#schema.getMutationType() : this.#schema.getQueryType();
    if (root === null || root === undefined)
      return { errors: [new GraphQLError('the supergraph has no such root type')] };
    const set = inlineFragments(op.selectionSet, fragments);
    const fields = fieldsFor(this.#schema, root, set, vars).filter((f) => f.name.value !== '__typename');
    const data: Obj = {};
    // Root fields by owner: a query's at once, a mutation's one by one in order.
    const groups: { sub: SupergraphSubgraph; fields: FieldNode[] }[] = [];
    for (const f of fields) {
      const sub = this.#owner(root.name, f.name.value);
      if (sub === undefined) continue;
      const g = mutation ? undefined : groups.find((x) => x.sub === sub);
      if (g === undefined) groups.push({ sub, fields: [f] });
      else g.fields.push(f);
    }
    const fetchGroup = async (g: { sub: SupergraphSubgraph; fields: FieldNode[] }): Promise<void> => {
      const sel = this.#selectionFor(
        g.sub,
        root.name,
        { kind: Kind.SELECTION_SET, selections: g.fields },
        false,
      );
      const got = await this.#send(
        ctx,
        g.sub,
        this.#operation(op, mutation ? 'mutation' : 'query', sel),
        vars,
        errors,
      );
      if (got !== undefined) Object.assign(data, got);
    };
    if (mutation) for (const g of groups) await fetchGroup(g);
    else await Promise.all(groups.map(fetchGroup));
    return this.#completed(ctx, document, op, root, vars, data, groups, errors);
  }

  /**
   * Starts one checked subscription of the client (its one root field): forwarded over WebSocket
   * (`graphql-transport-ws`) to the subgraph owning the field, with the part of the selection it
   * resolves (plus `__typename` and keys); each event it sends is completed as a query's root
   * answer is (entity fields from the other subgraphs through `_entities`, then the client's
   * document over it). The subgraph's `complete` ends the events, its `error` or its socket
   * closing fails them (transport-ws.ts sends the client `complete` or `error`); ending the events
   * (the client's `complete`, or its leaving) completes the subgraph's operation and closes its
   * socket. `open` opens the subgraph's socket (`svc://`: through its API's chain).
   */
  subscribe(
    ctx: EngineContext,
    document: DocumentNode,
    op: OperationDefinitionNode,
    variables: Obj | undefined,
    open: (sub: SupergraphSubgraph, query: string, variables: Obj) => AsyncIterableIterator<Obj>,
  ): AsyncIterableIterator<ExecutionResult> | { errors: GraphQLError[] } {
    const fragments: Record<string, FragmentDefinitionNode> = {};
    for (const d of document.definitions)
      if (d.kind === Kind.FRAGMENT_DEFINITION) fragments[d.name.value] = d;
    const vars = variables ?? {};
    const root = this.#schema.getSubscriptionType();
    if (root === null || root === undefined)
      return { errors: [new GraphQLError('the supergraph has no subscriptions')] };
    const set = inlineFragments(op.selectionSet, fragments);
    const fields = fieldsFor(this.#schema, root, set, vars).filter((f) => f.name.value !== '__typename');
    const field = fields[0];
    if (field === undefined) return { errors: [new GraphQLError('the subscription selects no field')] };
    const sub = this.#owner(root.name, field.name.value);
    if (sub === undefined)
      return {
        errors: [new GraphQLError(`${root.name}.${field.name.value}: no subgraph resolves this field`)],
      };
    const groups = [{ sub, fields: [field] }];
    const sel = this.#selectionFor(sub, root.name, { kind: Kind.SELECTION_SET, selections: [field] }, false);
    const upstream = open(sub, this.#operation(op, 'subscription', sel), vars);
    const completed = async (payload: Obj): Promise<ExecutionResult> => {
      const errors: GraphQLError[] = [];
      const list: unknown = payload.errors;
      for (const e of Array.isArray(list) ? (list as unknown[]) : []) {
        const m = isPlainObject(e) ? e.message : undefined;
        errors.push(new GraphQLError(`subgraph ${sub.name}: ${typeof m === 'string' ? m : 'error'}`));
      }
      const data: Obj = isPlainObject(payload.data) ? { ...payload.data } : {};
      if (!isPlainObject(payload.data) && errors.length === 0)
        errors.push(new GraphQLError(`subgraph ${sub.name} sent an event without data`));
      // Each event is its own request: entity fields are fetched afresh, never from the last event's calls.
      return this.#completed({ ...ctx, calls: new Map() }, document, op, root, vars, data, groups, errors);
    };
    const events: AsyncIterableIterator<ExecutionResult> = {
      async next() {
        const r = await upstream.next();
        if (r.done === true) return { value: undefined, done: true };
        return { value: await completed(r.value), done: false };
      },
      async return() {
        await upstream.return?.();
        return { value: undefined, done: true };
      },
      [Symbol.asyncIterator]() {
        return events;
      },
    };
    return events;
  }

  /**
   * The answer to the client's document over the root fields `groups` gave in `data`: the entity
   * fields of other subgraphs fetched level by level, then graphql-js over the merged objects.
   */
  async #completed(
    ctx: EngineContext,
    document: DocumentNode,
    op: OperationDefinitionNode,
    root: GraphQLObjectType,
    vars: Obj,
    data: Obj,
    groups: readonly { sub: SupergraphSubgraph; fields: FieldNode[] }[],
    errors: GraphQLError[],
  ): Promise<ExecutionResult> {
    // Entity fields, level by level.
    let level: { obj: Obj; set: SelectionSetNode; from: SupergraphSubgraph | undefined }[] = [];
    for (const g of groups)
      level.push({ obj: data, set: { kind: Kind.SELECTION_SET, selections: g.fields }, from: g.sub });
    let rounds = 0;
    while (level.length > 0 && rounds++ < 32)
      level = await this.#entities(ctx, op, level, root, vars, errors);
    const result = await execute({
      schema: this.#schema,
      document,
      rootValue: data,
      variableValues: vars,
      ...(op.name === undefined ? {} : { operationName: op.name.value }),
      fieldResolver: (source, _args, _ctx, info) =>
        isPlainObject(source) ? source[info.path.key as string] : undefined,
      typeResolver: (value) => (isPlainObject(value) ? (value.__typename as string | undefined) : undefined),
    });
    const all = [...errors, ...(result.errors ?? [])];
    return all.length === 0 ? { data: result.data } : { data: result.data, errors: all };
  }

  /** One level: the fields of its objects other subgraphs resolve, fetched; the next level. */
  async #entities(
    ctx: EngineContext,
    op: OperationDefinitionNode,
    level: { obj: Obj; set: SelectionSetNode; from: SupergraphSubgraph | undefined }[],
    root: GraphQLObjectType,
    vars: Obj,
    errors: GraphQLError[],
  ): Promise<{ obj: Obj; set: SelectionSetNode; from: SupergraphSubgraph | undefined }[]> {
    const next: typeof level = [];
    const batches = new Map<
      string,
      { sub: SupergraphSubgraph; type: GraphQLObjectType; fields: FieldNode[]; objs: Obj[] }
    >();
    for (const item of level) {
      const type = this.#typeOf(item.obj, root);
      if (type === undefined) continue;
      const missing = new Map<SupergraphSubgraph, FieldNode[]>();
      /** Fields waiting for what their `@requires` names: asked at the next round. */
      const deferred: FieldNode[] = [];
      for (const f of fieldsFor(this.#schema, type, item.set, vars)) {
        if (f.name.value === '__typename') continue;
        const key = responseKey(f);
        if (key in item.obj) {
          if (f.selectionSet !== undefined) {
            const inner = f.selectionSet;
            const walk = (v: unknown): void => {
              if (Array.isArray(v)) v.forEach(walk);
              else if (isPlainObject(v)) next.push({ obj: v, set: inner, from: item.from });
            };
            walk(item.obj[key]);
          }
          continue;
        }
        if (type === root) continue; // a root field whose subgraph failed
        const sub = this.#owner(type.name, f.name.value, item.from);
        if (sub === undefined || sub === item.from) continue;
        // `@requires`: the fields it needs come first (from their owners), then this field.
        const needs = sub.model.requires.get(`${type.name}.${f.name.value}`);
        const absent = (needs?.selections ?? []).filter(
          (r): r is FieldNode => r.kind === Kind.FIELD && !(r.name.value in item.obj),
        );
        const fetchable = absent.flatMap((r) => {
          const owner = this.#owner(type.name, r.name.value, item.from);
          return owner === undefined || owner === item.from || owner === sub ? [] : [{ owner, r }];
        });
        if (fetchable.length > 0) {
          for (const { owner, r } of fetchable) {
            const asked = missing.get(owner) ?? [];
            if (!asked.some((x) => responseKey(x) === r.name.value)) missing.set(owner, [...asked, r]);
          }
          deferred.push(f);
          continue;
        }
        missing.set(sub, [...(missing.get(sub) ?? []), f]);
      }
      if (deferred.length > 0)
        next.push({
          obj: item.obj,
          set: { kind: Kind.SELECTION_SET, selections: deferred },
          from: item.from,
        });
      for (const [sub, fields] of missing) {
        const id = `${sub.name}\u0000${type.name}\u0000${fields.map((f) => print(f)).join(' ')}${this.#batching ? '' : `\u0000${batches.size}`}`;
        const b = batches.get(id) ?? { sub, type, fields, objs: [] };
        b.objs.push(item.obj);
        batches.set(id, b);
      }
    }
    await Promise.all(
      [...batches.values()].map(async (b) => {
        const keys = b.sub.model.keys.get(b.type.name) ?? [];
        const needs = b.fields.flatMap(
          (f) => b.sub.model.requires.get(`${b.type.name}.${f.name.value}`)?.selections ?? [],
        );
        const representations = b.objs.map((o) => {
          const rep: Obj = { __typename: b.type.name };
          for (const k of keys[0]?.selections ?? [])
            if (k.kind === Kind.FIELD) rep[k.name.value] = o[k.name.value];
          // What `@requires` names, as the other subgraphs gave it.
          Object.assign(rep, picked(o, needs));
          return rep;
        });
        const inner = this.#selectionFor(b.sub, b.type.name, {
          kind: Kind.SELECTION_SET,
          selections: b.fields,
        });
        const sel: SelectionSetNode = {
          kind: Kind.SELECTION_SET,
          selections: [
            {
              kind: Kind.FIELD,
              name: { kind: Kind.NAME, value: '_entities' },
              arguments: [
                {
                  kind: Kind.ARGUMENT,
                  name: { kind: Kind.NAME, value: 'representations' },
                  value: { kind: Kind.VARIABLE, name: { kind: Kind.NAME, value: 'svcRepresentations' } },
                },
              ],
              selectionSet: {
                kind: Kind.SELECTION_SET,
                selections: [
                  {
                    kind: Kind.INLINE_FRAGMENT,
                    typeCondition: { kind: Kind.NAMED_TYPE, name: { kind: Kind.NAME, value: b.type.name } },
                    selectionSet: inner,
                  },
                ],
              },
            },
          ],
        };
        const query = this.#operation(op, 'query', sel, '$svcRepresentations: [_Any!]!');
        const got = await this.#send(
          ctx,
          b.sub,
          query,
          { ...vars, svcRepresentations: representations },
          errors,
        );
        const entities: unknown = got?._entities;
        b.objs.forEach((o, i) => {
          const e: unknown = Array.isArray(entities) ? entities[i] : undefined;
          if (isPlainObject(e)) for (const [k, v] of Object.entries(e)) if (!(k in o)) o[k] = v;
          // What the subgraph did not give is null: never asked again.
          for (const f of b.fields) if (!(responseKey(f) in o)) o[responseKey(f)] = null;
          next.push({ obj: o, set: { kind: Kind.SELECTION_SET, selections: b.fields }, from: b.sub });
        });
      }),
    );
    return next;
  }

  /** The object type of a value: its `__typename`, or the root for the root object. */
  #typeOf(obj: Obj, root: GraphQLObjectType): GraphQLObjectType | undefined {
    const name = obj.__typename;
    if (typeof name !== 'string') return root;
    const t = this.#schema.getType(name);
    return isObjectType(t) ? t : undefined;
  }
}
