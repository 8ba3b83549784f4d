/**
 * A Deployment and its Service running a Node script in a cluster, as the cluster suites start
 * their upstreams: non-root, restricted, Ready once its port `http` accepts connections.
 */

/** A restricted container's securityContext, as YAML (flow style). */
export const RESTRICTED_YAML =
  '{allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}';

/** What {@link nodeServiceManifest} runs. */
export interface NodeService {
  /** The Deployment's and Service's name (and the pods' label `app`). */
  name: string;
  /** Written into the objects' metadata when given (else `kubectl apply -n` decides). */
  namespace?: string;
  /** The container's name. */
  container: string;
  /** An image whose `node` runs the script. */
  image: string;
  script: string;
  env?: Readonly<Record<string, string>>;
  /** The port the script listens on (the container's port `http`). */
  containerPort: number;
  /** The Service's port leading to it. */
  servicePort: number;
}

/** The YAML of the Deployment and the Service of `s`, as two documents. */
export function nodeServiceManifest(s: NodeService): string {
  const meta =
    s.namespace === undefined ? `{name: ${s.name}}` : `{name: ${s.name}, namespace: ${s.namespace}}`;
  const env = Object.entries(s.env ?? {})
    .map(([name, value]) => `{name: ${name}, value: ${JSON.stringify(value)}}`)
    .join(', ');
  return `apiVersion: apps/v1
kind: Deployment
metadata: ${meta}
spec:
  selector: {matchLabels: {app: ${s.name}}}
  template:
    metadata: {labels: {app: ${s.name}}}
    spec:
      securityContext: {runAsNonRoot: true, runAsUser: 65532}
      containers:
        - name: ${s.container}
          image: ${s.image}
          imagePullPolicy: IfNotPresent
          command: [node, -e, ${JSON.stringify(s.script)}]
${env === '' ? '' : `          env: [${env}]\n`}          ports: [{name: http, containerPort: ${String(s.containerPort)}}]
          readinessProbe: {tcpSocket: {port: http}, periodSeconds: 1}
          securityContext: ${RESTRICTED_YAML}
---
apiVersion: v1
kind: Service
metadata: ${meta}
spec:
  selector: {app: ${s.name}}
  ports: [{name: http, port: ${String(s.servicePort)}, targetPort: http}]
`;
}
