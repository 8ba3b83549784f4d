/**
 * What the parts of the ApiKey controller share: the objects as it reads them (the key, the
 * policies it names, the Secret holding its value), how a key is named in the gateway, and the
 * dependencies of the reconciler (which tests replace).
 */
import { hash } from 'node:crypto';
import type * as k8s from '@kubernetes/client-node';
import type {
  ApiKey,
  ApiKeyStatus,
  ApiResourceRef,
  SecurityPolicy,
} from '../../../schemas/generated/kinds.ts';
import type { Logger } from '../../../lib/log.ts';
import type { SvcObject, SvcObjects } from '../../../lib/k8s/objects.ts';
import type { Connections } from '../../connections.ts';
import type { SecretContent } from '../../certificates.ts';
import type { ApiIdView } from '../api-refs.ts';
import type { ReportDeps } from '../status.ts';

/** An ApiKey with the metadata every stored object has. */
export type KeyObject = ApiKey & SvcObject<ApiKey['spec'], ApiKeyStatus>;

/** As much of a SecurityPolicy as a key reads. */
export interface PolicyView extends k8s.KubernetesObject {
  /** Its partitions: whether it grants access rights (which replace the key's own). */
  spec?: Pick<SecurityPolicy['spec'], 'partitions'>;
  status?: Pick<NonNullable<SecurityPolicy['status']>, 'pol_id' | 'conditions'>;
}

/**
 * Whether the gateway takes a policy's access rights for its keys (replacing theirs): its `acl`
 * partition is on, or it sets no partition (every part applies).
 */
export function grantsAccess(p: PolicyView): boolean {
  const parts = p.spec?.partitions ?? {};
  const any =
    parts.acl === true || parts.rate_limit === true || parts.quota === true || parts.complexity === true;
  return !any || parts.acl === true;
}

/** The Secret holding a key's value, as the reconciler sees it. */
export interface KeySecret {
  /** The value under the data key, or undefined when the Secret has no such key. */
  value: string | undefined;
  /** Changes whenever the Secret is written (basic passwords are re-sent then). */
  version: string;
}

/** What the reconciler needs; tests pass their own. */
export interface ApiKeyDeps extends ReportDeps<KeyObject> {
  read: (namespace: string, name: string) => Promise<KeyObject | undefined>;
  objects: Pick<SvcObjects<KeyObject>, 'ensureFinalizer' | 'removeFinalizer' | 'patchStatus'>;
  connections: Pick<Connections, 'resolve'>;
  policy: (namespace: string, name: string) => PolicyView | undefined;
  /** The Secret a certificate key is bound by (`spec.certificateSecretRef`), or undefined. */
  certificateSecret: (namespace: string, name: string) => SecretContent | undefined;
  /**
   * Whether a certificate the gateway holds is used by anything but the key `self` (an API that
   * lists it, another key bound to it): it is then left when the key lets it go.
   */
  certificateInUse: (id: string, self: KeyObject) => boolean;
  /** The API resource an access right names, or undefined when it does not exist. */
  api: (ref: ApiResourceRef) => ApiIdView | undefined;
  /**
   * The generated ApiDefinitions serving an HTTPRoute (`namespace/name`) an access right names
   * (route-rights.ts); without it, no route is served.
   */
  routeApis?: (route: string) => readonly ApiIdView[];
  /** The Secret's value under `dataKey`; undefined when the Secret does not exist. */
  secret: (namespace: string, name: string, dataKey: string) => KeySecret | undefined;
  /**
   * Writes `value` under `dataKey` of the Secret (created, owned by the key, when missing);
   * returns the Secret's new version.
   */
  writeSecret: (owner: KeyObject, name: string, dataKey: string, value: string) => Promise<string>;
  /**
   * The status this process last wrote for the object (by uid). The informer cache may not hold
   * it yet when a second reconcile starts right after the first: read stale, a rotation would
   * be done twice (a second value generated, the first one left in the gateway). This process
   * is the only writer (the leader), so what it remembers is never older than its cache.
   */
  written?: (uid: string | undefined) => ApiKeyStatus | undefined;
  log: Logger;
}

/** The stored ID of a token or a user name: what the gateway names the key by. */
export const keyHashOf = (raw: string): string => hash('sha256', raw, 'hex');

/** The Secret a key reads, and whether the operator generates it (no name given). */
export function secretOf(obj: KeyObject): { name: string; dataKey: string; generated: boolean } {
  const ref = obj.spec.secretRef;
  return {
    name: ref?.name ?? obj.metadata.name,
    dataKey: ref?.key ?? 'key',
    generated: ref?.name === undefined,
  };
}

/** A time as the status writes it: seconds, UTC. */
export const stamp = (d: Date): string => d.toISOString().replace(/\.\d+Z$/, 'Z');
