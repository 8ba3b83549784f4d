/**
 * How the plugin reaches a gateway's management API, as the operator does: the Secret of the
 * operator's configuration (`svc-operator-conf` in `svc-operator-system` by default: SVC_URL,
 * SVC_AUTH, SVC_MODE) or an OperatorContext (`spec.env`, unset fields from its `secretRef`),
 * read with the user's kubeconfig, so only what RBAC lets the user read. `--gateway URL
 * --secret-env VAR` bypasses the cluster (the secret from the environment, never a flag, so it
 * stays out of shell history and process lists).
 */
import * as k8s from '@kubernetes/client-node';
import { secretReader } from '../connections.ts';
import { effectiveSecretRef } from '../../schemas/rules/earlier-names.ts';

/** A gateway's management endpoint. */
export interface GatewayTarget {
  url: string;
  secret: string;
}

/** Where to find the gateway: the flags of a command. */
export interface TargetFlags {
  gateway?: string | undefined;
  secretEnv?: string | undefined;
  operatorContext?: string | undefined;
  operatorNamespace?: string | undefined;
  operatorSecret?: string | undefined;
  kubeconfig?: string | undefined;
}

/** The gateway the flags name, or an Error saying what is missing. */
export async function gatewayTarget(
  flags: TargetFlags,
  env: Readonly<Record<string, string | undefined>>,
): Promise<GatewayTarget> {
  if (flags.gateway !== undefined) {
    const name = flags.secretEnv ?? 'SVC_AUTH';
    const secret = env[name];
    if (secret === undefined || secret === '') {
      throw new Error(
        `--gateway needs the management secret in the environment variable ${name} (--secret-env)`,
      );
    }
    return { url: flags.gateway.replace(/\/+$/, ''), secret };
  }
  const kc = new k8s.KubeConfig();
  if (flags.kubeconfig !== undefined) kc.loadFromFile(flags.kubeconfig);
  else kc.loadFromDefault();
  const secrets = secretReader(kc);
  const read = async (ns: string, name: string): Promise<Record<string, string>> => {
    try {
      const data = await secrets(ns, name);
      if (data === undefined) throw new Error(`Secret ${ns}/${name} not found`);
      return data;
    } catch (err) {
      if (err instanceof k8s.ApiException && err.code === 403) {
        throw new Error(
          `Secret ${ns}/${name}: your kubeconfig's user may not read it (RBAC); ask for "get secrets" there, or use --gateway URL --secret-env VAR`,
          { cause: err },
        );
      }
      throw err;
    }
  };
  let fields: { mode?: string; url?: string; auth?: string };
  let where: string;
  if (flags.operatorContext !== undefined) {
    const [ns, name] = flags.operatorContext.includes('/')
      ? flags.operatorContext.split('/', 2)
      : [kc.getContextObject(kc.getCurrentContext())?.namespace ?? 'default', flags.operatorContext];
    where = `OperatorContext ${ns}/${name}`;
    const api = kc.makeApiClient(k8s.CustomObjectsApi);
    const obj = (await api.getNamespacedCustomObject({
      group: 'svc.svc.io',
      version: 'v1alpha1',
      namespace: ns ?? 'default',
      plural: 'operatorcontexts',
      name: name ?? '',
    })) as {
      spec?: {
        env?: Record<string, unknown>;
        secretRef?: { name: string; namespace?: string };
        fromSecret?: { name: string; namespace?: string };
      };
    };
    const e = obj.spec?.env ?? {};
    // secretRef, else its earlier name fromSecret (stored so without the webhooks).
    const ref = effectiveSecretRef(obj.spec);
    const s = ref === undefined ? {} : await read(ref.namespace ?? ns ?? 'default', ref.name);
    fields = {
      mode: (e.mode as string | undefined) ?? s.SVC_MODE,
      url: (e.url as string | undefined) ?? s.SVC_URL,
      auth: (e.auth as string | undefined) ?? s.SVC_AUTH,
    };
  } else {
    const ns = flags.operatorNamespace ?? 'svc-operator-system';
    const name = flags.operatorSecret ?? 'svc-operator-conf';
    where = `Secret ${ns}/${name}`;
    const s = await read(ns, name);
    fields = { mode: s.SVC_MODE, url: s.SVC_URL, auth: s.SVC_AUTH };
  }
  if (fields.mode === 'pro') {
    throw new Error(
      `${where}: mode pro talks to a dashboard; explain asks a gateway: use --gateway URL --secret-env VAR`,
    );
  }
  if (fields.url === undefined || fields.auth === undefined) {
    throw new Error(`${where}: no gateway URL and secret (SVC_URL and SVC_AUTH)`);
  }
  return { url: fields.url.replace(/\/+$/, ''), secret: fields.auth };
}
