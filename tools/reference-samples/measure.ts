/**
 * Measures how many of the reference operator's published sample ApiDefinitions svc admits, as a
 * user migrating would apply them: every `*.yaml`/`*.yml` under a directory (a checkout of
 * TykTechnologies/tyk-operator's `config/samples/`, which this repository does not copy), renamed
 * to svc (group `tyk.tyk.io` → `svc.svc.io`, kinds `Tyk*` → `Svc*`, `x-tyk-*` keys → `x-svc-*`,
 * internal targets `tyk://<api>/...` → `svc://<api>/...`),
 * each ApiDefinition validated by the admission webhook's own validation, one sample file at a
 * time, with the file's objects and every other file's Secrets, policies and contexts there for
 * its lookups.
 *
 *   node tools/reference-samples/measure.ts <dir> [--json]
 *
 * The admitted ones then go, with their upstream pointed at a local server, through the operator's
 * translation and the gateway's check of a management write (as e2e/contract/admitted-is-served
 * does). Prints one line per ApiDefinition document (`served`, `admitted` with the gateway's
 * refusal, or `refused` with the webhook's messages) and the totals; `--json` prints the same as JSON for docs/compatibility.md.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { API_VERSION } from '../../schemas/common.ts';
import { formatProblem } from '../../schemas/rules/field-problem.ts';
import type { CompileEnv } from '../../gateway/routes/check.ts';
import type { ApiDefinitionInput } from '../../operator/translate/api-definition.ts';
import { defaultApiDefinition } from '../../webhooks/api-definition.default.ts';
import { validateApiDefinition } from '../../webhooks/api-definition.validate.ts';
import { memoryLookups } from '../../webhooks/memory-lookups.ts';
import { withoutNulls } from '../../lib/http/json-body.ts';
import { translatedVerdict } from '../../e2e/contract/gateway-verdict.ts';
import { derivedId } from '../../operator/ids.ts';
import {
  composeGraph,
  graphRefOf,
  subgraphRefsOf,
  subgraphSdlOf,
  type ResolvedGraph,
} from '../../schemas/rules/graphs.ts';
import { composeSubgraphApis } from '../../schemas/rules/subgraph-apis.ts';

type Obj = Record<string, unknown>;

/**
 * Renames a reference object to svc's group, kinds and extension keys, and the reference gateway's
 * scheme of internal targets (`tyk://<api>/...`, another API of the gateway) to svc's (`svc://`,
 * resolved the same way: `self`, an API ID, or an API's name; schemas/rules/internal-target.ts).
 */
export function renameToSvc(v: unknown, top = true): unknown {
  if (Array.isArray(v)) return v.map((x) => renameToSvc(x, false));
  if (typeof v === 'string') return /^tyk:\/\//i.test(v) ? `svc://${v.slice('tyk://'.length)}` : v;
  if (v === null || typeof v !== 'object') return v;
  const out: Obj = {};
  for (const [k, x] of Object.entries(v as Obj)) {
    const key = k.startsWith('x-tyk-') ? `x-svc-${k.slice('x-tyk-'.length)}` : k;
    if (top && k === 'apiVersion' && typeof x === 'string' && x.startsWith('tyk.tyk.io/'))
      out[key] = API_VERSION;
    else if (top && k === 'kind' && typeof x === 'string' && x.startsWith('Tyk'))
      out[key] = `Svc${x.slice(3)}`;
    else out[key] = renameToSvc(x, false);
  }
  return out;
}

function yamlFiles(dir: string, base = dir): string[] {
  return readdirSync(dir)
    .sort()
    .flatMap((name) => {
      const file = path.join(dir, name);
      if (statSync(file).isDirectory()) return yamlFiles(file, base);
      return /\.ya?ml$/.test(name) ? [path.relative(base, file)] : [];
    });
}

/** One ApiDefinition document's outcome. */
export interface Outcome {
  /** `<file>#<index among the file's ApiDefinitions>`. */
  key: string;
  name: string;
  admitted: boolean;
  /** The webhook's refusals (none when admitted). */
  problems: string[];
  /**
   * An Ingress template (label `template: "true"`): served through Ingresses, not on its own;
   * `gateway` is the verdict on an API made from it with an Ingress rule's listen path.
   */
  template: boolean;
  /**
   * For an admitted one: what the gateway refuses of the operator's translation, with the
   * upstream pointed at a local server (none: the gateway serves it).
   */
  gateway: string[];
}

const LOCAL_UPSTREAM = 'http://127.0.0.1:8000';

/** The API with its upstream pointed at a local server, as a user trying the samples would. */
function localUpstream(obj: Obj): Obj {
  const spec = (obj.spec ?? {}) as Obj;
  const proxy = (spec.proxy ?? {}) as Obj;
  const target = typeof proxy.target_url === 'string' ? proxy.target_url : '';
  const local = /^(tcp|tls):/.test(target) ? target.replace(/\/\/[^/]*/, '//127.0.0.1:6379') : LOCAL_UPSTREAM;
  return { ...obj, spec: { ...spec, proxy: target === '' ? proxy : { ...proxy, target_url: local } } };
}

/**
 * The gateway a user trying the samples runs: TLS configured (for the HTTPS samples) and
 * `enable_jsvm` on, as the reference's gateway needs it for virtual endpoints too.
 */
const GATEWAY: CompileEnv = {
  listenPort: 8080,
  controlPort: undefined,
  tls: true,
  jsvm: true,
  // Streaming on with Bento installed: the data graph's Kafka sources are consumed through it.
  streaming: () => undefined,
};

/** The listen path an Ingress rule gives an API made from a template (`path: /from-ingress`). */
const INGRESS_PATH = '/from-ingress/';

/**
 * An Ingress template as the Ingress controller instantiates it: the template's spec with the
 * listen path of an Ingress rule.
 */
export function fromTemplate(obj: Obj): Obj {
  const spec = (obj.spec ?? {}) as Obj;
  const proxy = (spec.proxy ?? {}) as Obj;
  const metadata = { ...(obj.metadata as Obj), labels: {} };
  return { ...obj, metadata, spec: { ...spec, proxy: { ...proxy, listen_path: INGRESS_PATH } } };
}

/**
 * What the gateway refuses of the operator's translation of an admitted API (as
 * e2e/contract/admitted-is-served does): the IDs the reconciler resolves (policies, certificates
 * uploaded from Secrets, public-key pins read from Secrets) stand in as it would compute them.
 */
export function gatewayVerdict(obj: Obj, graph?: ResolvedGraph): string[] {
  return translatedVerdict(localUpstream(obj) as unknown as ApiDefinitionInput, GATEWAY, graph);
}

/**
 * What an API's graphql.graph_ref resolves to among the samples' objects, as the operator resolves
 * it (operator/controllers/graph-refs.ts): a SubGraph's SDL, or a SuperGraph composed from its
 * SubGraphs (super-graph.ts) with the ApiDefinition serving each, or the subgraph APIs its
 * `supergraph.subgraphs_refs` names, composed; undefined when it names none or the graph is not
 * among them (the gateway then says what is missing).
 */
export function graphOf(obj: Obj, objects: readonly Obj[]): ResolvedGraph | undefined {
  const meta = (o: Obj): { name: string; namespace: string } =>
    o.metadata as { name: string; namespace: string };
  const find = (kind: string, ref: { name: string; namespace: string }): Obj | undefined =>
    objects.find((o) => o.kind === kind && meta(o).name === ref.name && meta(o).namespace === ref.namespace);
  // The reference's earlier form: subgraph APIs by name, composed as the operator composes them.
  const byApis = composeSubgraphApis((obj.spec as Obj | undefined)?.graphql, meta(obj).namespace, {
    api: (ref) => {
      const api = find('ApiDefinition', ref);
      const spec = (api?.spec ?? {}) as Obj;
      return api === undefined
        ? undefined
        : {
            id: typeof spec.api_id === 'string' ? spec.api_id : derivedId(ref.namespace, ref.name),
            graphql: spec.graphql,
          };
    },
    subGraphSdl: (ref) => {
      const sub = find('SubGraph', ref);
      return sub === undefined ? undefined : subgraphSdlOf(sub.spec as Obj).sdl;
    },
  });
  if (byApis !== undefined) return 'graph' in byApis ? byApis.graph : undefined;
  const named = graphRefOf((obj.spec as Obj | undefined)?.graphql, meta(obj).namespace);
  if (named === undefined) return undefined;
  const graph = find(named.kind, named.ref);
  if (graph === undefined) return undefined;
  const spec = (graph.spec ?? {}) as Obj;
  if (named.kind === 'SubGraph') return { kind: 'SubGraph', sdl: subgraphSdlOf(spec).sdl };
  const subgraphs = [];
  for (const { ref } of subgraphRefsOf(spec, meta(graph).namespace)) {
    const sub = ref === undefined ? undefined : find('SubGraph', ref);
    if (ref === undefined || sub === undefined) return undefined;
    const api = objects.find((o) => {
      const g =
        o.kind === 'ApiDefinition' ? graphRefOf((o.spec as Obj).graphql, meta(o).namespace) : undefined;
      return g?.kind === 'SubGraph' && g.ref.name === ref.name && g.ref.namespace === ref.namespace;
    });
    if (api === undefined) return undefined;
    subgraphs.push({
      name: ref.name,
      namespace: ref.namespace,
      sdl: subgraphSdlOf(sub.spec as Obj).sdl,
      url: `svc://${derivedId(meta(api).namespace, meta(api).name)}/`,
    });
  }
  const given =
    [spec.schema, spec.merged_sdl].find((v): v is string => typeof v === 'string' && v !== '') ?? '';
  const composed = composeGraph(subgraphs, given);
  if ('errors' in composed) return undefined;
  return { kind: 'SuperGraph', schema: composed.schema, subgraphs };
}

/** Every ApiDefinition document of the samples under `dir`, validated as the webhook does. */
export async function measure(dir: string): Promise<Outcome[]> {
  const all: { file: string; obj: Obj }[] = [];
  for (const file of yamlFiles(dir)) {
    let docs;
    try {
      docs = parseAllDocuments(readFileSync(path.join(dir, file), 'utf8'));
    } catch {
      continue;
    }
    for (const d of Array.isArray(docs) ? docs : [docs]) {
      let js: unknown;
      try {
        js = d.toJS();
      } catch {
        continue;
      }
      if (js === null || typeof js !== 'object' || Array.isArray(js)) continue;
      // The API server drops null values of fields that are not nullable before calling webhooks.
      const obj = withoutNulls(renameToSvc(js) as Obj);
      obj.metadata = { namespace: 'default', ...((obj.metadata ?? {}) as Obj) };
      all.push({ file, obj });
    }
  }
  // Applied one sample file at a time, its documents in order (kubectl apply -f): the lookups see
  // every file's Secrets, ConfigMaps, policies and contexts, and the ApiDefinitions of the file
  // before this one, but no other file's ApiDefinitions (whose listen paths would clash: most
  // samples use /httpbin).
  const lookupsOf = (file: string, self: Obj) => {
    const before = all.slice(
      0,
      all.findIndex((o) => o.obj === self),
    );
    return memoryLookups(
      all
        .filter((o) => o.obj.kind !== 'ApiDefinition' || (o.file === file && before.includes(o)))
        .map(({ obj }) => obj),
    );
  };
  const outcomes: Outcome[] = [];
  const index = new Map<string, number>();
  for (const { file, obj } of all) {
    if (obj.kind !== 'ApiDefinition') continue;
    const i = index.get(file) ?? 0;
    index.set(file, i + 1);
    const defaulted = defaultApiDefinition(obj) as Obj;
    const got = await validateApiDefinition(defaulted, undefined, lookupsOf(file, obj));
    const admitted = got.errors.length === 0;
    // An Ingress template (label template: "true") is served only through the Ingresses naming it.
    const template = ((obj.metadata as Obj).labels as Obj | undefined)?.template === 'true';
    outcomes.push({
      key: `${file}#${i}`,
      name: String((obj.metadata as Obj).name),
      admitted,
      problems: got.errors.map((e) => formatProblem(e)),
      template,
      gateway: !admitted
        ? []
        : gatewayVerdict(
            template ? fromTemplate(defaulted) : defaulted,
            graphOf(
              defaulted,
              all.map((o) => o.obj),
            ),
          ),
    });
  }
  return outcomes;
}

if (import.meta.main) {
  const dir = process.argv[2];
  if (dir === undefined) {
    process.stderr.write('usage: node tools/reference-samples/measure.ts <dir> [--json]\n');
    process.exit(2);
  }
  const outcomes = await measure(dir);
  const admitted = outcomes.filter((o) => o.admitted).length;
  const served = outcomes.filter((o) => o.admitted && o.gateway.length === 0).length;
  if (process.argv.includes('--json')) {
    process.stdout.write(
      `${JSON.stringify({ total: outcomes.length, admitted, served, outcomes }, null, 2)}\n`,
    );
  } else {
    for (const o of outcomes) {
      process.stdout.write(
        !o.admitted
          ? `refused   ${o.key} (${o.name}): ${o.problems.join('; ')}\n`
          : o.gateway.length > 0
            ? `admitted  ${o.key} (${o.name}) but the gateway refuses it: ${o.gateway.join('; ')}\n`
            : `served    ${o.key} (${o.name})${o.template ? ': an Ingress template, through an Ingress' : ''}\n`,
      );
    }
    process.stdout.write(
      `${outcomes.length} ApiDefinitions: ${admitted} admitted (${served} of them served), ${outcomes.length - admitted} refused\n`,
    );
  }
}
