import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ConfigError } from '../lib/config.ts';
import { finalizerNamespaces, loadWebhookConfig } from './config.ts';

test('defaults match the chart', () => {
  assert.deepEqual(loadWebhookConfig([], {}), {
    port: 9443,
    address: '0.0.0.0',
    healthPort: 8082,
    certMode: 'self-managed',
    certDir: '/tmp/k8s-webhook-server/serving-certs',
    namespace: 'svc-operator-system',
    serviceName: 'svc-operator-webhook-service',
    caSecretName: 'svc-operator-webhook-ca',
    // The chart names its ServiceAccount (SVC_WEBHOOK_CA_SECRET_OWNER); out of a cluster, none.
    caSecretOwner: '',
    mutatingConfigurationName: 'svc-operator-mutating-webhook-configuration',
    validatingConfigurationName: 'svc-operator-validating-webhook-configuration',
    extraHosts: '',
    resyncSeconds: 10,
    shutdownDelaySeconds: 5,
    logLevel: 'info',
    finalizers: true,
    watchNamespace: '',
  });
});

test("the operator's finalizer: in its watched namespaces, or nowhere", () => {
  assert.deepEqual(finalizerNamespaces(loadWebhookConfig([], {})), []);
  assert.deepEqual(finalizerNamespaces(loadWebhookConfig([], { WATCH_NAMESPACE: 'shop,team-a,' })), [
    'shop',
    'team-a',
  ]);
  assert.equal(finalizerNamespaces(loadWebhookConfig(['--finalizers=false'], {})), false);
  assert.equal(finalizerNamespaces(loadWebhookConfig([], { SVC_WEBHOOK_FINALIZERS: 'false' })), false);
});

test('the Bento binary that checks streams: SVC_WEBHOOK_BENTO_PATH or --bento-path', () => {
  assert.equal(loadWebhookConfig([], {}).bentoPath, undefined);
  assert.equal(
    loadWebhookConfig([], { SVC_WEBHOOK_BENTO_PATH: '/usr/local/bin/bento' }).bentoPath,
    '/usr/local/bin/bento',
  );
  assert.equal(loadWebhookConfig(['--bento-path=/opt/bento'], {}).bentoPath, '/opt/bento');
});

test('environment variables, then flags', () => {
  const cfg = loadWebhookConfig(['--port=10443', '--cert-mode', 'files'], {
    SVC_WEBHOOK_PORT: '9000',
    POD_NAMESPACE: 'ops',
    SVC_WEBHOOK_EXTRA_HOSTS: '127.0.0.1,localhost',
  });
  assert.equal(cfg.port, 10443);
  assert.equal(cfg.certMode, 'files');
  assert.equal(cfg.namespace, 'ops');
  assert.equal(cfg.extraHosts, '127.0.0.1,localhost');
});

test('every problem is named', () => {
  assert.throws(
    () => loadWebhookConfig(['--cert-mode=vault', '--bogus'], { SVC_WEBHOOK_PORT: 'x' }),
    (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.equal(err.problems.length, 3, err.message);
      assert.match(err.message, /flag --bogus: unknown/);
      assert.match(err.message, /environment variable SVC_WEBHOOK_PORT/);
      assert.match(err.message, /flag --cert-mode: Unsupported value/);
      return true;
    },
  );
});
