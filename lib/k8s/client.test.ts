/**
 * The API server connection: calls share keep-alive connections (client-node alone opens a new
 * TLS connection per call). A real HTTPS server stands in for the API server's transport.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:https';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import * as k8s from '@kubernetes/client-node';
import { createCa, issueServingCert } from '../x509.ts';
import { loadKubeConfig } from './client.ts';

test('API calls share one TLS connection instead of opening one per call', async () => {
  const ca = await createCa({ commonName: 'test-ca', validityDays: 1 });
  const serving = await issueServingCert(ca, {
    commonName: '127.0.0.1',
    ipAddresses: ['127.0.0.1'],
    validityDays: 1,
  });
  let handshakes = 0;
  const server = createServer({ cert: serving.certPem, key: serving.keyPem }, (_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ kind: 'NamespaceList', apiVersion: 'v1', metadata: {}, items: [] }));
  });
  server.on('secureConnection', () => handshakes++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const dir = mkdtempSync(join(tmpdir(), 'svc-kc-'));
  const file = join(dir, 'kubeconfig');
  writeFileSync(
    file,
    `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:${port}", certificate-authority-data: ${Buffer.from(ca.certPem).toString('base64')}}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`,
  );
  try {
    const core = loadKubeConfig(file).makeApiClient(k8s.CoreV1Api);
    for (let i = 0; i < 5; i++) {
      const list = await core.listNamespace();
      assert.deepEqual(list.items, []);
    }
    // undici may open a second connection while the first one's response is being finished.
    assert.ok(handshakes <= 2, `${handshakes} TLS handshakes for 5 calls one after the other`);
    await Promise.all(Array.from({ length: 3 }, () => core.listNamespace()));
    assert.ok(handshakes <= 5, `${handshakes} TLS handshakes for 8 calls (2 reused, at most 3 new)`);
  } finally {
    server.closeAllConnections();
    server.close();
  }
});
