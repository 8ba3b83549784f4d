import * as k8s from '@kubernetes/client-node';
import { createHash } from 'node:crypto';
import { GROUP, VERSION } from '../../schemas/common.ts';

/**
 * Loads the cluster connection: the file at `kubeconfig` when given, else the usual lookup
 * (KUBECONFIG, ~/.kube/config, then the in-cluster service account).
 */
export function loadKubeConfig(kubeconfig?: string): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  if (kubeconfig) kc.loadFromFile(kubeconfig);
  else kc.loadFromDefault();
  reuseConnections(kc);
  return kc;
}

/** The private method of client-node's KubeConfig that makes each request's dispatcher. */
interface DispatcherMaker {
  createDispatcher: (cluster: k8s.Cluster | null, agentOptions: object) => unknown;
}

/**
 * client-node (2.x) builds a new undici Agent for every request, so every call to the API server
 * opens a new TLS connection: in a burst of reconciles the operator spent a third of its CPU in
 * TLS handshakes (docs/design/operator-scale.md). This keeps one dispatcher per distinct set of
 * connection options (cluster, CA, client certificate), so calls share keep-alive connections;
 * rotated credentials (a new client certificate read from its file) get a new one.
 */
function reuseConnections(kc: k8s.KubeConfig): void {
  const maker = kc as unknown as DispatcherMaker;
  const create = maker.createDispatcher.bind(kc);
  const cache = new Map<string, unknown>();
  maker.createDispatcher = (cluster, agentOptions) => {
    const o = agentOptions as Partial<Record<'ca' | 'cert' | 'key' | 'pfx', string | Buffer>>;
    const h = createHash('sha256').update(
      JSON.stringify([cluster?.server, cluster?.proxyUrl, cluster?.skipTLSVerify]),
    );
    for (const part of [o.ca, o.cert, o.key, o.pfx]) h.update(part ?? '-').update('|');
    const key = h.digest('hex');
    if (!cache.has(key)) {
      if (cache.size >= 8) cache.clear(); // credentials rotated many times: start over
      cache.set(key, create(cluster, agentOptions));
    }
    return cache.get(key);
  };
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
