/**
 * The chart's pre-delete hook, `node operator/uninstall-main.ts --namespace NS --deployment NAME
 * --mutating NAME --validating NAME`: stops the operator and takes its finalizers off every
 * object (operator/uninstall.ts), so that nothing deleted after `helm uninstall` waits for an
 * operator that is gone. Exits non-zero on failure: Helm then stops the uninstall and says so.
 */
import { parseArgs } from 'node:util';
import { errorMessage } from '../lib/errors.ts';
import { loadKubeConfig } from '../lib/k8s/client.ts';
import { createLogger } from '../lib/log.ts';
import { releaseFinalizers, stopOperator } from './uninstall.ts';

const log = createLogger({ component: 'operator-uninstall', level: 'info' });
try {
  const { values } = parseArgs({
    options: {
      namespace: { type: 'string' },
      deployment: { type: 'string' },
      mutating: { type: 'string' },
      validating: { type: 'string' },
      kubeconfig: { type: 'string' },
    },
    strict: true,
  });
  const need = (name: keyof typeof values): string => {
    const v = values[name];
    if (typeof v !== 'string' || v === '') throw new Error(`--${name} is required`);
    return v;
  };
  const install = {
    namespace: need('namespace'),
    deployment: need('deployment'),
    mutatingWebhookConfiguration: need('mutating'),
    validatingWebhookConfiguration: need('validating'),
  };
  const kc = loadKubeConfig(values.kubeconfig);
  await stopOperator(kc, install, log);
  const released = await releaseFinalizers(kc, log);
  log.info('operator uninstalled: finalizers released', { objects: released });
} catch (err) {
  log.error('uninstall hook failed', { error: errorMessage(err) });
  process.exitCode = 1;
}
