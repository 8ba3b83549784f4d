/**
 * ReferenceGrants: the one rule by which an object of one namespace may name an object of
 * another (an HTTPRoute's backendRef to a Service, a Gateway listener's certificateRef to a
 * Secret). The grant is in the namespace of the object named; it lets `from` (group, kind, and
 * the namespace of the object that names) name `to` (group, kind, and a name, or every object of
 * that kind when `name` is empty).
 */
import { GATEWAY_GROUP, type GatewayInput, type ReferenceGrantInput } from './types.ts';

/** The object that names: a Gateway API kind in a namespace. */
export interface GrantFrom {
  kind: string;
  namespace: string;
}

/** The object named: its group ("" for core), kind, namespace and name. */
export interface GrantTo {
  group: string;
  kind: string;
  namespace: string;
  name: string;
}

/**
 * Whether `from` may name `to`: the same namespace, or a ReferenceGrant in `to`'s namespace
 * lets that kind of that namespace name it.
 */
export function referenceGranted(
  grants: readonly ReferenceGrantInput[],
  from: GrantFrom,
  to: GrantTo,
): boolean {
  if (from.namespace === to.namespace) return true;
  return grants.some(
    (g) =>
      g.metadata.namespace === to.namespace &&
      g.spec.from.some(
        (f) => f.group === GATEWAY_GROUP && f.kind === from.kind && f.namespace === from.namespace,
      ) &&
      g.spec.to.some(
        (t) =>
          t.group === to.group &&
          t.kind === to.kind &&
          (t.name === undefined || t.name === '' || t.name === to.name),
      ),
  );
}

/** A Secret a Gateway listener may serve the certificate of (the Gateway's namespace, or granted). */
export function listenerSecretGranted(
  grants: readonly ReferenceGrantInput[],
  gatewayNamespace: string,
  secret: { namespace: string; name: string },
): boolean {
  return referenceGranted(
    grants,
    { kind: 'Gateway', namespace: gatewayNamespace },
    { group: '', kind: 'Secret', ...secret },
  );
}

/**
 * Whether a listener of the Gateway names the Secret `namespace/name` in its certificateRefs
 * and may: what an API generated for that Gateway must show before it serves a Secret of
 * another namespace (the ApiDefinition controller asks it again).
 */
export function gatewayServesSecret(
  gateway: GatewayInput,
  grants: readonly ReferenceGrantInput[],
  secret: { namespace: string; name: string },
): boolean {
  const ns = gateway.metadata.namespace;
  const named = gateway.spec.listeners.some(
    (l) =>
      l.protocol === 'HTTPS' &&
      (l.tls?.certificateRefs ?? []).some(
        (c) =>
          (c.group ?? '') === '' &&
          (c.kind ?? 'Secret') === 'Secret' &&
          (c.namespace ?? ns) === secret.namespace &&
          c.name === secret.name,
      ),
  );
  return named && listenerSecretGranted(grants, ns, secret);
}
