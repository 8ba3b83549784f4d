/**
 * Fakes for the reconcilers' unit tests: a gateway that keeps documents in maps and logs each
 * call, connections that resolve contexts to such gateways, objects that record status and
 * finalizer writes, and an event log. Tests read the writes and the status out of them.
 */
import assert from 'node:assert/strict';
import { isDeepStrictEqual } from 'node:util';
import type { GatewayApiDefinition, GatewayPolicy } from '../../schemas/generated/models.ts';
import type { NamespacedRef } from '../../schemas/generated/kinds.ts';
import type { SvcObject } from '../../lib/k8s/objects.ts';
import { silentLogger } from '../../lib/log.ts';
import type { ManagementClient, OasDocument } from '../clients/management.ts';
import type { Resolved } from '../connections.ts';
import { certificateId } from '../certificates.ts';

/** A gateway in memory. `failWith` makes every call throw it (a gateway down, a refusal). */
export class FakeGateway implements ManagementClient {
  readonly url: string;
  readonly apis = new Map<string, GatewayApiDefinition>();
  readonly oasApis = new Map<string, OasDocument>();
  readonly policies = new Map<string, GatewayPolicy>();
  /** Calls that changed something, as `createPolicy <id>`, `deleteApi <id>`, `reload`. */
  readonly writes: string[] = [];
  failWith: Error | undefined;
  /**
   * Reads of APIs answer what the gateway held at its last reload, as a gateway of several
   * processes (`--workers`) may: the process a read reaches keeps its copy from before a write
   * another one took until they all reload.
   */
  staleReads = false;
  #atReload = {
    apis: new Map<string, GatewayApiDefinition>(),
    oasApis: new Map<string, OasDocument>(),
  };

  constructor(url: string) {
    this.url = url;
  }

  #check(): void {
    if (this.failWith) throw this.failWith;
  }

  #get<T>(map: Map<string, T>, id: string): Promise<T | undefined> {
    this.#check();
    const v = map.get(id);
    return Promise.resolve(v === undefined ? undefined : structuredClone(v));
  }

  #put<T>(map: Map<string, T>, call: string, id: string, doc: T): Promise<void> {
    this.#check();
    map.set(id, structuredClone(doc));
    this.writes.push(`${call} ${id}`);
    return Promise.resolve();
  }

  #delete(map: Map<string, unknown>, call: string, id: string): Promise<boolean> {
    this.#check();
    const had = map.delete(id);
    if (had) this.writes.push(`${call} ${id}`);
    return Promise.resolve(had);
  }

  getApi(id: string): Promise<GatewayApiDefinition | undefined> {
    return this.#get(this.staleReads ? this.#atReload.apis : this.apis, id);
  }
  createApi(def: GatewayApiDefinition): Promise<void> {
    return this.#put(this.apis, 'createApi', def.api_id ?? '', def);
  }
  updateApi(id: string, def: GatewayApiDefinition): Promise<void> {
    return this.#put(this.apis, 'updateApi', id, def);
  }
  deleteApi(id: string): Promise<boolean> {
    return this.#delete(this.apis, 'deleteApi', id);
  }
  getOasApi(id: string): Promise<OasDocument | undefined> {
    return this.#get(this.staleReads ? this.#atReload.oasApis : this.oasApis, id);
  }
  createOasApi(doc: OasDocument): Promise<void> {
    const info = (doc['x-svc-api-gateway'] as { info?: { id?: string } } | undefined)?.info;
    return this.#put(this.oasApis, 'createOasApi', info?.id ?? '', doc);
  }
  updateOasApi(id: string, doc: OasDocument): Promise<void> {
    return this.#put(this.oasApis, 'updateOasApi', id, doc);
  }
  deleteOasApi(id: string): Promise<boolean> {
    return this.#delete(this.oasApis, 'deleteOasApi', id);
  }
  getPolicy(id: string): Promise<GatewayPolicy | undefined> {
    return this.#get(this.policies, id);
  }
  createPolicy(policy: GatewayPolicy): Promise<void> {
    return this.#put(this.policies, 'createPolicy', policy.id ?? '', policy);
  }
  updatePolicy(id: string, policy: GatewayPolicy): Promise<void> {
    return this.#put(this.policies, 'updatePolicy', id, policy);
  }
  deletePolicy(id: string): Promise<boolean> {
    return this.#delete(this.policies, 'deletePolicy', id);
  }
  /** Certificates by ID (org ID and the SHA-256 hex of the leaf's DER), their PEM. */
  readonly certs = new Map<string, string>();
  addCert(pem: string, orgId: string): Promise<boolean> {
    this.#check();
    const id = certificateId(pem, orgId);
    if (this.certs.has(id)) return Promise.resolve(false);
    this.certs.set(id, pem);
    this.writes.push(`addCert ${id}`);
    return Promise.resolve(true);
  }
  deleteCert(id: string): Promise<boolean> {
    return this.#delete(this.certs, 'deleteCert', id);
  }
  reload(): Promise<void> {
    this.#check();
    this.writes.push('reload');
    this.#atReload.apis = structuredClone(this.apis);
    this.#atReload.oasApis = structuredClone(this.oasApis);
    return Promise.resolve();
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}

/**
 * Connections over fake gateways: `default` for resources without contextRef, and one per
 * context key (`namespace/name`); a context without a gateway does not exist.
 */
export function fakeConnections(gateways: Readonly<Record<string, FakeGateway>>, org = 'org-1') {
  return {
    resolve(ref: NamespacedRef | undefined, namespace: string): Promise<Resolved> {
      const key = ref ? `${ref.namespace ?? namespace}/${ref.name}` : 'default';
      const client = gateways[key];
      if (!client) {
        return Promise.resolve({
          ok: false,
          reason: 'ContextNotFound',
          message: `OperatorContext ${key} does not exist`,
        });
      }
      return Promise.resolve({
        ok: true,
        conn: { mode: 'ce', url: client.url, auth: 'x', org, insecureSkipVerify: false },
        client,
      });
    },
  };
}

/** Object writes in memory: the statuses written and the finalizers added and removed. */
export function fakeObjects<T extends SvcObject>() {
  const statuses: unknown[] = [];
  const finalizers: string[] = [];
  return {
    statuses,
    finalizers,
    ensureFinalizer(obj: T, finalizer: string): Promise<T> {
      if (obj.metadata.finalizers?.includes(finalizer)) return Promise.resolve(obj);
      finalizers.push(`+${finalizer}`);
      const list = [...(obj.metadata.finalizers ?? []), finalizer];
      return Promise.resolve({ ...obj, metadata: { ...obj.metadata, finalizers: list } });
    },
    removeFinalizer(obj: T, finalizer: string): Promise<void> {
      if (obj.metadata.finalizers?.includes(finalizer)) finalizers.push(`-${finalizer}`);
      return Promise.resolve();
    },
    patchStatus(obj: T, status: NonNullable<T['status']>): Promise<boolean> {
      if (isDeepStrictEqual(obj.status ?? {}, status)) return Promise.resolve(false);
      statuses.push(structuredClone(status));
      return Promise.resolve(true);
    },
    get(): Promise<T | undefined> {
      return Promise.resolve(undefined);
    },
  };
}

/** Events as `<type> <reason>: <message>`. */
export function fakeEvents() {
  const lines: string[] = [];
  return {
    lines,
    record(_obj: unknown, type: string, reason: string, message: string): Promise<void> {
      lines.push(`${type} ${reason}: ${message}`);
      return Promise.resolve();
    },
  };
}

/** The fixed clock of the tests. */
export const NOW = new Date('2025-06-01T12:00:00.000Z');

/** The parts every reconciler's deps share. */
export function baseDeps<T extends SvcObject>(gateways: Readonly<Record<string, FakeGateway>>) {
  return {
    objects: fakeObjects<T>(),
    connections: fakeConnections(gateways),
    events: fakeEvents(),
    now: () => NOW,
    log: silentLogger(),
  };
}

/** The `Ready` condition of a status, without its time. */
export function readyOf(status: unknown): { status: string; reason: string; message: string } | undefined {
  const conds = (
    status as { conditions?: { type: string; status: string; reason: string; message: string }[] }
  ).conditions;
  const c = conds?.find((x) => x.type === 'Ready');
  return c ? { status: c.status, reason: c.reason, message: c.message } : undefined;
}

/** Asserts the `Ready` condition of the last status written. */
export function assertReady(
  status: unknown,
  want: { status: 'True' | 'False'; reason: string; message?: RegExp },
): void {
  const ready = readyOf(status ?? {});
  assert.ok(ready, 'a Ready condition');
  assert.equal(ready.status, want.status, ready.message);
  assert.equal(ready.reason, want.reason, ready.message);
  if (want.message) assert.match(ready.message, want.message);
}

/** Runs a reconcile; what it returned, or what it threw. */
export async function settle<R>(run: Promise<R>): Promise<{ result?: R; thrown?: unknown }> {
  try {
    return { result: await run };
  } catch (thrown) {
    return { thrown: thrown ?? new Error('undefined thrown') };
  }
}
