/**
 * What the parts of the ingress controller share: its names (finalizer, annotations, class
 * controller), the objects as it reads them, its settings, and the dependencies of the
 * reconciler (which tests replace).
 */
import type * as k8s from '@kubernetes/client-node';
import type { EventRecorder } from '../../../lib/k8s/events.ts';
import type { Logger } from '../../../lib/log.ts';
import type { OasTemplateSpec, ServiceInput } from '../../translate/ingress.ts';
import type { ApiObject } from '../objects.ts';

/** The finalizer that keeps an Ingress until its generated ApiDefinitions are deleted. */
export const INGRESS_FINALIZER = 'finalizers.svc.svc.io/ingress';
/** `spec.controller` of our IngressClass. */
export const INGRESS_CONTROLLER = 'svc.io/ingress-controller';
/** The legacy class annotation, compared with `WATCH_INGRESS_CLASS`. */
export const LEGACY_CLASS_ANNOTATION = 'kubernetes.io/ingress.class';
/** The annotation that makes an IngressClass the default one. */
export const DEFAULT_CLASS_ANNOTATION = 'ingressclass.kubernetes.io/is-default-class';
/** Annotation on a generated ApiDefinition: the hash of the spec the Ingress controller wrote. */
export const SPEC_HASH_ANNOTATION = 'svc.io/ingress-spec-hash';
/** Annotation on the Ingress listing its generated ApiDefinitions (`name=apiID`, comma-separated). */
export const APIS_ANNOTATION = 'svc.io/apis';

/** An Ingress as the controller reads it. */
export type IngressObject = k8s.V1Ingress & {
  metadata: k8s.V1ObjectMeta & { name: string; namespace: string };
};

/** An IngressClass, as much of it as the controller reads. */
export interface IngressClassView {
  metadata?: { name?: string; annotations?: Record<string, string> };
  spec?: { controller?: string };
}

/** An SvcOasApiDefinition an Ingress may name as its template, as the controller resolved it. */
export interface OasTemplateView {
  labelled: boolean;
  deleting: boolean;
  /** Its document as a classic spec, or why it can't be one. */
  spec: OasTemplateSpec;
}

/** Writes to ApiDefinitions, as the Ingress controller does them. */
export interface GeneratedApiWriter {
  /** Creates; false when it exists already (409). */
  create: (obj: ApiObject) => Promise<boolean>;
  replace: (obj: ApiObject) => Promise<void>;
  /** Deletes; absent counts as done. */
  delete: (namespace: string, name: string) => Promise<void>;
}

/** Writes to Ingresses. */
export interface IngressWriter {
  /**
   * Adds the finalizer and sets the annotation listing the generated APIs (undefined removes it),
   * in one write, with the object's resourceVersion; returns the updated object.
   */
  prepare: (obj: IngressObject, apis: string | undefined) => Promise<IngressObject>;
  removeFinalizer: (obj: IngressObject) => Promise<void>;
  patchLoadBalancer: (obj: IngressObject, ingress: k8s.V1IngressLoadBalancerIngress[]) => Promise<void>;
}

/** What the reconciler needs; tests pass their own. */
export interface IngressDeps {
  read: (namespace: string, name: string) => Promise<IngressObject | undefined>;
  classes: () => readonly IngressClassView[];
  watchClass: string;
  httpPort: number;
  httpsPort: number;
  /** The gateway's own port (see `IngressTranslationContext.gatewayPort`). */
  gatewayPort?: number;
  service: (namespace: string, name: string) => ServiceInput | undefined;
  secretExists: (namespace: string, name: string) => boolean;
  /** An ApiDefinition of the cluster (the template an Ingress names). */
  apiDefinition: (namespace: string, name: string) => ApiObject | undefined;
  /** An SvcOasApiDefinition of the cluster, as a template (when the name is no ApiDefinition). */
  oasTemplate: (namespace: string, name: string) => OasTemplateView | undefined;
  /** The ApiDefinitions generated for an Ingress (labelled with its name, owned by it). */
  generated: (ingress: IngressObject) => readonly ApiObject[];
  apis: GeneratedApiWriter;
  ingresses: IngressWriter;
  /** The addresses for `status.loadBalancer.ingress`; empty leaves the status as it is. */
  loadBalancer: () => Promise<k8s.V1IngressLoadBalancerIngress[]>;
  events: Pick<EventRecorder, 'record'>;
  /** The problems last reported per Ingress, so that a retry loop records no new Events. */
  reported: Map<string, string>;
  log: Logger;
}

/** Settings of the ingress controller (operator/config.ts). */
export interface IngressSettings {
  watchClass: string;
  httpPort: number;
  httpsPort: number;
  /** A fixed address for `status.loadBalancer` (an IP or a host name); empty: none. */
  address: string;
  /** `namespace/name` of the gateway's Service, whose address goes into `status.loadBalancer`. */
  publishService: string;
  /** The operator's management URL (`SVC_URL`): its port is the gateway's own. */
  managementUrl?: string;
}

/** The Ingresses using a template ApiDefinition (`namespace/name`), as a lookup the template controller shares. */
export type TemplateUsers = (templateKey: string) => string[];
/** The same, listed from the API server rather than the informer's cache. */
export type FreshTemplateUsers = (templateKey: string) => Promise<string[]>;
