import * as k8s from '@kubernetes/client-node';
import { GROUP, VERSION } from '../../schemas/common.ts';

/**
 * Loads the cluster connection: the file at `kubeconfig` when given, else the usual lookup
 * (KUBECONFIG, ~/.kube/config, then the in-cluster service account).
 */
export function loadKubeConfig(kubeconfig?: string): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  if (kubeconfig) kc.loadFromFile(kubeconfig);
  else kc.loadFromDefault();
  return kc;
}

/** The typed API clients the operator and webhooks use. */
export interface KubeClients {
  kc: k8s.KubeConfig;
  core: k8s.CoreV1Api;
  custom: k8s.CustomObjectsApi;
  coordination: k8s.CoordinationV1Api;
  events: k8s.EventsV1Api;
  networking: k8s.NetworkingV1Api;
  admissionRegistration: k8s.AdmissionregistrationV1Api;
}

/** Makes every client from one KubeConfig. */
export function makeClients(kc: k8s.KubeConfig): KubeClients {
  return {
    kc,
    core: kc.makeApiClient(k8s.CoreV1Api),
    custom: kc.makeApiClient(k8s.CustomObjectsApi),
    coordination: kc.makeApiClient(k8s.CoordinationV1Api),
    events: kc.makeApiClient(k8s.EventsV1Api),
    networking: kc.makeApiClient(k8s.NetworkingV1Api),
    admissionRegistration: kc.makeApiClient(k8s.AdmissionregistrationV1Api),
  };
}

/** Group, version and plural of an svc kind, for CustomObjectsApi calls. */
export function svcResource(plural: string): { group: string; version: string; plural: string } {
  return { group: GROUP, version: VERSION, plural };
}

/** The HTTP status of an error thrown by client-node, if it carries one. */
export function statusOf(err: unknown): number | undefined {
  if (err instanceof k8s.ApiException) return err.code;
  return undefined;
}
