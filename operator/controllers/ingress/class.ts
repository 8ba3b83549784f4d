/** Which Ingresses are the controller's: by IngressClass, legacy annotation or default class. */
import type * as k8s from '@kubernetes/client-node';
import {
  DEFAULT_CLASS_ANNOTATION,
  INGRESS_CONTROLLER,
  LEGACY_CLASS_ANNOTATION,
  type IngressClassView,
} from './types.ts';

/**
 * Whether an Ingress is ours: `spec.ingressClassName` names an IngressClass whose controller is
 * ours; else the legacy annotation equals `watchClass`; else (no class at all) one of our
 * IngressClasses is the default.
 */
export function isOurIngress(
  ingress: Pick<k8s.V1Ingress, 'metadata' | 'spec'>,
  classes: readonly IngressClassView[],
  watchClass: string,
): boolean {
  const ours = (c: IngressClassView): boolean => c.spec?.controller === INGRESS_CONTROLLER;
  const className = ingress.spec?.ingressClassName;
  if (className !== undefined && className !== '') {
    return classes.some((c) => c.metadata?.name === className && ours(c));
  }
  const legacy = ingress.metadata?.annotations?.[LEGACY_CLASS_ANNOTATION];
  if (legacy !== undefined) return legacy === watchClass;
  return classes.some((c) => ours(c) && c.metadata?.annotations?.[DEFAULT_CLASS_ANNOTATION] === 'true');
}
