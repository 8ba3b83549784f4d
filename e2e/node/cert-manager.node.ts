/**
 * cert-manager issuing svc's certificates on the node (issue 28 item 3): cert-manager built here
 * and installed from its own chart (e2e/node/cert-manager.ts), then svc-operator installed with
 * `webhooks.certManager.enabled=true` and svc-gateway with `tls.certManager.enabled=true`, as the
 * kind workflow installs them. cert-manager issues the webhook's certificate, its cainjector fills
 * the caBundle of both webhook configurations, and the API server calls the webhooks through their
 * Service; the gateway serves HTTPS with the certificate cert-manager issued it.
 * Run by `make e2e-node` (under the operator lock), not by `make e2e`. Leaves cert-manager installed.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { X509Certificate, randomBytes } from 'node:crypto';
import { waitFor } from '../../lib/testing/wait.ts';
import { CERT_MANAGER_NAMESPACE, installCertManager } from './cert-manager.ts';
import type { CertManager } from './cert-manager.ts';
import {
  GATEWAY_NS,
  OPERATOR_NS,
  PULL_POLICY,
  RESTRICTED,
  apply,
  dumpOnFailure,
  kubectl,
  nodeImage,
  runPod,
  useNamespace,
  waitForPodsReady,
  echoUpstreamDocs,
} from './helpers.ts';
import { installGatewayAndOperator, uninstallOperator } from './install.ts';
import type { Installed } from './install.ts';

const SERVING_CERT = 'svc-operator-serving-cert';
const SERVING_SECRET = 'svc-operator-webhook-server-cert';
const GATEWAY_TLS_SECRET = 'svc-gateway-default-tls';
const HTTPS_PORT = 8443;

let cm: CertManager;
let installed: Installed;
let image: string;

after(async () => {
  // Resources first, while the operator runs and takes its finalizers off; then the releases.
  await kubectl([
    '-n',
    ns,
    'delete',
    'apidefinitions,operatorcontexts',
    '--all',
    '--wait=true',
    '--timeout=120s',
  ]).catch(() => undefined);
  await uninstallOperator({ gateway: true });
});

const ns = useNamespace('svc-node-cm');
dumpOnFailure(CERT_MANAGER_NAMESPACE, OPERATOR_NS, GATEWAY_NS);

before(async () => {
  cm = await installCertManager();
  process.stderr.write(
    `cert-manager ${cm.version}: images ${(cm.imagesMs / 1000).toFixed(1)}s, ` +
      (cm.reused
        ? 'already installed\n'
        : `helm install to issuing ${(cm.installToReadyMs / 1000).toFixed(1)}s\n`),
  );
  installed = await installGatewayAndOperator({
    gatewayArgs: ['--set', 'tls.certManager.enabled=true'],
    operatorArgs: ['--set', 'webhooks.certManager.enabled=true'],
  });
  image = await nodeImage();
});

interface Pod {
  metadata: { name: string; labels?: Record<string, string> };
  status?: { phase?: string };
  spec: {
    securityContext?: { runAsNonRoot?: boolean; runAsUser?: number };
    containers: {
      image: string;
      securityContext?: { runAsUser?: number; readOnlyRootFilesystem?: boolean };
    }[];
  };
}

async function secretData(namespace: string, name: string): Promise<Record<string, string>> {
  const secret = JSON.parse(await kubectl(['-n', namespace, 'get', 'secret', name, '-o', 'json'])) as {
    type: string;
    data: Record<string, string>;
  };
  assert.equal(secret.type, 'kubernetes.io/tls');
  return secret.data;
}

const pem = (b64: string | undefined): string => Buffer.from(b64 ?? '', 'base64').toString('utf8');

test('cert-manager: controller, webhook and cainjector Ready, from the images made here, not as root', async () => {
  await waitForPodsReady(CERT_MANAGER_NAMESPACE);
  const pods = (
    JSON.parse(await kubectl(['-n', CERT_MANAGER_NAMESPACE, 'get', 'pods', '-o', 'json'])) as { items: Pod[] }
  ).items.filter((p) => p.status?.phase !== 'Succeeded');
  const components = pods.map((p) => p.metadata.labels?.['app.kubernetes.io/component']).sort();
  assert.deepEqual(components, ['cainjector', 'controller', 'webhook']);
  for (const pod of pods) {
    // No runAsUser anywhere: the kubelet started them only because the images' user is not root.
    assert.equal(pod.spec.securityContext?.runAsNonRoot, true, pod.metadata.name);
    assert.equal(pod.spec.securityContext.runAsUser, undefined, pod.metadata.name);
    for (const c of pod.spec.containers)
      assert.equal(c.securityContext?.runAsUser, undefined, pod.metadata.name);
    // On the node: the release installCertManager made (on another cluster, whatever installed it).
    if (cm.images.size === 0) continue;
    assert.equal(pod.metadata.labels?.['app.kubernetes.io/version'], cm.version, pod.metadata.name);
    for (const c of pod.spec.containers) {
      assert.ok([...cm.images.values()].includes(c.image), `${pod.metadata.name}: ${c.image}`);
      assert.equal(c.securityContext?.readOnlyRootFilesystem, true, pod.metadata.name);
    }
  }
});

test('svc-operator: cert-manager issued the webhook certificate and injected its CA into both webhook configurations', async () => {
  const ready = await kubectl([
    '-n',
    OPERATOR_NS,
    'get',
    'certificate',
    SERVING_CERT,
    '-o',
    'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
  ]);
  assert.equal(ready, 'True');
  const data = await secretData(OPERATOR_NS, SERVING_SECRET);
  const cert = new X509Certificate(pem(data['tls.crt']));
  assert.match(
    cert.subjectAltName ?? '',
    new RegExp(`DNS:svc-operator-webhook-service\\.${OPERATOR_NS}\\.svc\\b`),
  );
  assert.ok(new Date(cert.validTo) > new Date(), 'not expired');
  const caBundle = data['ca.crt'];
  assert.ok(caBundle !== undefined && caBundle !== '', 'ca.crt in the issued Secret');
  for (const kind of ['mutatingwebhookconfiguration', 'validatingwebhookconfiguration']) {
    const name = `svc-operator-${kind.startsWith('mutating') ? 'mutating' : 'validating'}-webhook-configuration`;
    const config = JSON.parse(await kubectl(['get', kind, name, '-o', 'json'])) as {
      webhooks: {
        name: string;
        clientConfig: { caBundle?: string; service?: { name: string; namespace: string } };
      }[];
    };
    assert.ok(config.webhooks.length >= 5, `${name}: ${config.webhooks.length} webhooks`);
    for (const w of config.webhooks) {
      assert.equal(w.clientConfig.caBundle, caBundle, `${name} ${w.name}: caBundle injected by cainjector`);
      assert.deepEqual(
        [w.clientConfig.service?.name, w.clientConfig.service?.namespace],
        ['svc-operator-webhook-service', OPERATOR_NS],
      );
    }
  }
});

test('an invalid ApiDefinition is refused by the API server through the webhook Service, the field named', async () => {
  const bad = {
    apiVersion: 'svc.svc.io/v1alpha1',
    kind: 'ApiDefinition',
    metadata: { name: 'wildcard', namespace: ns },
    spec: {
      name: 'wildcard',
      active: true,
      use_keyless: true,
      protocol: 'http',
      enable_ip_whitelisting: true,
      allowed_ips: ['10.0.0.*'],
      proxy: { listen_path: '/wildcard/', target_url: 'http://example.invalid', strip_listen_path: true },
    },
  };
  await assert.rejects(
    apply([bad]),
    /The ApiDefinition "wildcard" is invalid: spec\.allowed_ips\[0\]: Invalid value: "10\.0\.0\.\*": wildcards are not supported/,
  );
  assert.equal(
    await kubectl(['-n', ns, 'get', 'apidefinition', 'wildcard', '--ignore-not-found', '-o', 'name']),
    '',
  );
});

test("a valid ApiDefinition is admitted with the mutating webhook's defaults, and served over HTTPS with the certificate cert-manager issued the gateway", async () => {
  const listenPath = `/tls-${randomBytes(3).toString('hex')}/`;
  await apply([
    ...echoUpstreamDocs({
      name: 'echo',
      ns,
      image,
      command: true,
      podSecurity: { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532 },
    }),
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'team-conf', namespace: ns },
      stringData: { SVC_AUTH: installed.gatewaySecret, SVC_ORG: 'e2e-node-cm' },
    },
    {
      apiVersion: 'svc.svc.io/v1alpha1',
      kind: 'OperatorContext',
      metadata: { name: 'team', namespace: ns },
      spec: {
        env: { mode: 'ce', url: `http://svc-gateway.${GATEWAY_NS}.svc:8080` },
        secretRef: { name: 'team-conf' },
      },
    },
    {
      apiVersion: 'svc.svc.io/v1alpha1',
      kind: 'ApiDefinition',
      metadata: { name: 'tls', namespace: ns },
      spec: {
        name: 'tls',
        active: true,
        use_keyless: true,
        protocol: 'https',
        listen_port: HTTPS_PORT,
        contextRef: { name: 'team' },
        proxy: { listen_path: listenPath, target_url: `http://echo.${ns}.svc:8000`, strip_listen_path: true },
      },
    },
  ]);
  // The mutating webhook filled in the namespaces of both references (the CRDs default neither).
  const ctx = JSON.parse(await kubectl(['-n', ns, 'get', 'operatorcontext', 'team', '-o', 'json'])) as {
    spec: { secretRef: { namespace?: string } };
  };
  assert.equal(ctx.spec.secretRef.namespace, ns);
  const api = JSON.parse(await kubectl(['-n', ns, 'get', 'apidefinition', 'tls', '-o', 'json'])) as {
    spec: { contextRef: { name: string; namespace?: string } };
  };
  assert.deepEqual(api.spec.contextRef, { name: 'team', namespace: ns });

  await kubectl(['-n', ns, 'rollout', 'status', 'deploy/echo', '--timeout=180s']);
  const data = await secretData(GATEWAY_NS, GATEWAY_TLS_SECRET);
  const issued = new X509Certificate(pem(data['tls.crt']));
  const host = `svc-gateway.${GATEWAY_NS}.svc`;
  // The client trusts only the CA in the Secret cert-manager wrote, and checks the host name.
  const client = `
    const https = require('node:https');
    const ca = ${JSON.stringify(pem(data['ca.crt']))};
    const get = () => new Promise((resolve, reject) => {
      const req = https.get({ host: ${JSON.stringify(host)}, port: ${HTTPS_PORT}, path: '${listenPath}anything?x=1', ca }, (res) => {
        // Read now: a kept-alive socket is handed back to the agent by the end of the body.
        const fingerprint = res.socket.getPeerCertificate().fingerprint256;
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve({ status: res.statusCode, body, fingerprint }));
      });
      req.on('error', reject);
    });
    (async () => {
      const deadline = Date.now() + 150000;
      let last = '';
      while (Date.now() < deadline) {
        try {
          const r = await get();
          if (r.status === 200) { console.log(JSON.stringify({ ...r, body: JSON.parse(r.body) })); return; }
          last = r.status + ' ' + r.body;
        } catch (e) { last = String(e); }
        await new Promise((r) => setTimeout(r, 1000));
      }
      console.error('not served over HTTPS: ' + last);
      process.exit(1);
    })();`;
  const { phase, logs } = await runPod(ns, 'client', {
    securityContext: { runAsNonRoot: true, runAsUser: 65532, runAsGroup: 65532 },
    containers: [
      {
        name: 'client',
        image,
        imagePullPolicy: PULL_POLICY,
        command: ['node', '-e', client],
        securityContext: RESTRICTED,
      },
    ],
  });
  assert.equal(phase, 'Succeeded', logs);
  const out = JSON.parse(logs) as {
    status: number;
    fingerprint: string;
    body: { pod: string; path: string };
  };
  assert.equal(out.status, 200);
  assert.equal(
    out.fingerprint,
    issued.fingerprint256,
    'the gateway presents the certificate cert-manager issued',
  );
  assert.match(out.body.pod, /^echo-/);
  assert.equal(out.body.path, '/anything?x=1');
  const status = await waitFor(
    'the ApiDefinition Ready',
    async () => {
      const s = await kubectl([
        '-n',
        ns,
        'get',
        'apidefinition',
        'tls',
        '-o',
        'jsonpath={.status.conditions[?(@.type=="Ready")].status}',
      ]);
      return s === 'True' ? s : undefined;
    },
    60_000,
    1000,
  );
  assert.equal(status, 'True');
});
