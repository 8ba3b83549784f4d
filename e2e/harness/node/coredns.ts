/** CoreDNS in a Deployment behind the kube-dns Service: the pods' cluster DNS. */
import { stringify } from 'yaml';
import { CLUSTER_DOMAIN, COREDNS_IMAGE, DNS_IP, PAUSE_IMAGE, tool } from './layout.ts';
import { imageTag, importImage, scratchImage } from './images.ts';
import { nodeKubectl } from './kubectl.ts';
import { waitDaemon } from './processes.ts';

export function coreDnsManifests(image: string): string {
  const corefile = `.:1053 {
    errors
    health {
        lameduck 5s
    }
    ready
    kubernetes ${CLUSTER_DOMAIN} in-addr.arpa ip6.arpa {
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 30
    }
    cache 30
    loadbalance
    reload
}
`;
  const labels = { 'k8s-app': 'kube-dns' };
  const docs = [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'coredns', namespace: 'kube-system' } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'system:coredns' },
      rules: [
        {
          apiGroups: [''],
          resources: ['endpoints', 'services', 'pods', 'namespaces'],
          verbs: ['list', 'watch'],
        },
        { apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['list', 'watch'] },
      ],
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: 'system:coredns' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:coredns' },
      subjects: [{ kind: 'ServiceAccount', name: 'coredns', namespace: 'kube-system' }],
    },
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'coredns', namespace: 'kube-system' },
      data: { Corefile: corefile },
    },
    {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'coredns', namespace: 'kube-system', labels },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: {
          metadata: { labels },
          spec: {
            serviceAccountName: 'coredns',
            priorityClassName: 'system-cluster-critical',
            dnsPolicy: 'Default',
            securityContext: { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532 },
            tolerations: [{ key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' }],
            containers: [
              {
                name: 'coredns',
                image,
                imagePullPolicy: 'Never',
                args: ['-conf', '/etc/coredns/Corefile'],
                ports: [
                  { name: 'dns', containerPort: 1053, protocol: 'UDP' },
                  { name: 'dns-tcp', containerPort: 1053, protocol: 'TCP' },
                ],
                securityContext: {
                  allowPrivilegeEscalation: false,
                  readOnlyRootFilesystem: true,
                  capabilities: { drop: ['ALL'] },
                },
                resources: { requests: { cpu: '50m', memory: '50Mi' }, limits: { memory: '170Mi' } },
                volumeMounts: [{ name: 'config', mountPath: '/etc/coredns', readOnly: true }],
                livenessProbe: { httpGet: { path: '/health', port: 8080 }, periodSeconds: 10 },
                readinessProbe: { httpGet: { path: '/ready', port: 8181 }, periodSeconds: 2 },
              },
            ],
            volumes: [{ name: 'config', configMap: { name: 'coredns' } }],
          },
        },
      },
    },
    {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: 'kube-dns', namespace: 'kube-system', labels },
      spec: {
        clusterIP: DNS_IP,
        selector: labels,
        ports: [
          { name: 'dns', port: 53, targetPort: 1053, protocol: 'UDP' },
          { name: 'dns-tcp', port: 53, targetPort: 1053, protocol: 'TCP' },
        ],
      },
    },
  ];
  return docs.map((d) => stringify(d)).join('---\n');
}

/** Makes the pause and CoreDNS images (cached) and imports them into the node's containerd. */
export async function importNodeImages(dir: string): Promise<void> {
  const pauseArchive = await scratchImage({
    name: PAUSE_IMAGE,
    tag: imageTag('pause'),
    binary: tool('pause'),
    entrypoint: ['/pause'],
  });
  const corednsArchive = await scratchImage({
    name: COREDNS_IMAGE,
    tag: imageTag('coredns'),
    binary: tool('coredns'),
    entrypoint: ['/coredns'],
  });
  await importImage(pauseArchive, dir);
  await importImage(corednsArchive, dir);
}

/** Applies CoreDNS and waits until its Deployment is available (fails early if the kubelet died). */
export async function deployCoreDns(dir: string, kubeletPid: number): Promise<void> {
  await nodeKubectl(['apply', '-f', '-'], coreDnsManifests(`${COREDNS_IMAGE}:${imageTag('coredns')}`), dir);
  await waitDaemon(
    'CoreDNS Deployment available',
    dir,
    'kubelet',
    kubeletPid,
    async () => {
      const out = await nodeKubectl(
        ['-n', 'kube-system', 'get', 'deploy', 'coredns', '-o', 'jsonpath={.status.availableReplicas}'],
        undefined,
        dir,
      );
      return out.trim() === '1';
    },
    120_000,
  );
}
