/**
 * Builders of the objects the webhook tests use (unit tables, the fuzz test and e2e), so each
 * case states only what it is about.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { API_VERSION } from '../schemas/common.ts';
import type { PatchOp } from './json-patch.ts';

type Obj = Record<string, unknown>;

const meta = (name: string, namespace: string): { name: string; namespace: string } => ({ name, namespace });

/** A valid ApiDefinition with `spec` merged over a keyless HTTP API at /<name>/. */
export function apiDefinition(name: string, spec: Obj = {}, namespace = 'default'): Obj {
  return {
    apiVersion: API_VERSION,
    kind: 'ApiDefinition',
    metadata: meta(name, namespace),
    spec: {
      name,
      use_keyless: true,
      proxy: { listen_path: `/${name}/`, target_url: `http://${name}.${namespace}.svc:8080` },
      ...spec,
    },
  };
}

/** An SvcOasApiDefinition pointing at `configMap`/`keyName`. */
export function oasApi(
  name: string,
  configMap: string,
  keyName = 'oas.yaml',
  namespace = 'default',
  ref: Obj = {},
): Obj {
  return {
    apiVersion: API_VERSION,
    kind: 'SvcOasApiDefinition',
    metadata: meta(name, namespace),
    spec: { svcOAS: { configmapRef: { name: configMap, keyName, ...ref } } },
  };
}

/** An SvcStreamsApiDefinition pointing at `configMap`/`keyName`. */
export function streamsApi(
  name: string,
  configMap: string,
  keyName = 'streams.yaml',
  namespace = 'default',
): Obj {
  return {
    apiVersion: API_VERSION,
    kind: 'SvcStreamsApiDefinition',
    metadata: meta(name, namespace),
    spec: { svcStreams: { configmapRef: { name: configMap, keyName } } },
  };
}

/** A SecurityPolicy named `name` with `spec` merged over a minimal spec. */
export function securityPolicy(name: string, spec: Obj = {}, namespace = 'default'): Obj {
  return {
    apiVersion: API_VERSION,
    kind: 'SecurityPolicy',
    metadata: meta(name, namespace),
    spec: { name, ...spec },
  };
}

/** An OperatorContext with `spec`. */
export function operatorContext(name: string, spec: Obj, namespace = 'default'): Obj {
  return { apiVersion: API_VERSION, kind: 'OperatorContext', metadata: meta(name, namespace), spec };
}

/** A ConfigMap with `data`. */
export function configMap(
  name: string,
  data: Record<string, string>,
  namespace = 'default',
): Obj & { data: Record<string, string> } {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: meta(name, namespace), data };
}

/** A Secret with the given keys (values are irrelevant to the webhook). */
export function secret(
  name: string,
  keys: readonly string[],
  namespace = 'default',
): Obj & { data: Record<string, string> } {
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: meta(name, namespace),
    data: Object.fromEntries(keys.map((k) => [k, Buffer.from('x').toString('base64')])),
  };
}

/** A file of webhooks/testdata/. */
export function testdata(file: string): string {
  return readFileSync(path.join(import.meta.dirname, 'testdata', file), 'utf8');
}

/** A valid OAS document (YAML) for an API listening on `listenPath`, with optional extra YAML. */
export function oasDocument(listenPath = '/petstore/', name = 'petstore'): string {
  return testdata('petstore.oas.yaml')
    .replace('/petstore/', listenPath)
    .replace('name: petstore', `name: ${name}`);
}

/** A valid streams document (YAML) listening on `listenPath`. */
export function streamsDocument(listenPath = '/events/'): string {
  return testdata('events.streams.yaml').replace('/events/', listenPath);
}

/** Applies RFC 6902 add, replace and remove operations to a copy of `doc`. */
export function applyPatch(doc: unknown, ops: readonly PatchOp[]): unknown {
  let root = structuredClone(doc);
  for (const op of ops) {
    if (op.path === '') {
      root = op.op === 'remove' ? undefined : structuredClone(op.value);
      continue;
    }
    const parts = op.path
      .split('/')
      .slice(1)
      .map((p) => p.replaceAll('~1', '/').replaceAll('~0', '~'));
    const last = parts.pop() ?? '';
    let parent = root as Record<string, unknown>;
    for (const p of parts) parent = parent[p] as Record<string, unknown>;
    if (op.op === 'remove') Reflect.deleteProperty(parent, last);
    else parent[last] = structuredClone(op.value);
  }
  return root;
}
