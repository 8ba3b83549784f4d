/**
 * The plugin's command line: parses the arguments, runs a subcommand, returns the exit code.
 * Output goes through `io` so that tests read exactly what a user sees.
 */
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { translateManifests, type ManifestFile } from './translate.ts';
import * as k8s from '@kubernetes/client-node';
import { gatewayTarget, type TargetFlags } from './gateway.ts';
import { listStatus, statusTable } from './status.ts';
import { compare, diffText, type DiffEntry } from './diff.ts';
import { explanationTable, type ExplanationView } from './explain-print.ts';

/** Where the command writes, and the environment it reads (`--secret-env`, SVC_ORG). */
export interface CliIo {
  out: (text: string) => void;
  err: (text: string) => void;
  env: Readonly<Record<string, string | undefined>>;
}

const USAGE = `Usage: kubectl svc <command> [options]

Commands:
  translate -f FILE [-f FILE ...] [-o yaml|json] [--org ORG] [-n NAMESPACE]
      What the operator would send to the gateway for the resources in FILE, offline.
  explain METHOD URL [-H 'Name: value' ...] [--key KEY] [--client-ip IP] [-o table|json]
      Asks a gateway how it would answer a request, without proxying or counting it.
      The gateway: the operator's Secret (--operator-namespace, --operator-secret), an
      OperatorContext (--operator-context NS/NAME), or --gateway URL --secret-env VAR.
  diff [KIND/NAME] [-n NAMESPACE] [-o table|json] [--org ORG] (and the gateway flags of explain)
      The gateway's objects against what the operator would push: in sync, drifted, missing.
  status [-n NAMESPACE | -A] [-o table|json] [--kubeconfig FILE]
      Every svc resource with its gateway ID, Ready condition and gateway.

See docs/kubectl-plugin.md.
`;

/** Runs the plugin with `argv` (without `node` and the script); resolves to the exit code. */
export async function main(argv: readonly string[], io: CliIo): Promise<number> {
  const [command, ...rest] = argv;
  try {
    switch (command) {
      case 'translate':
        return await translateCommand(rest, io);
      case 'explain':
        return await explainCommand(rest, io);
      case 'status':
        return await statusCommand(rest, io);
      case 'diff':
        return await diffCommand(rest, io);
      case undefined:
      case 'help':
      case '-h':
      case '--help':
        io.out(USAGE);
        return command === undefined ? 1 : 0;
      default:
        io.err(`error: unknown command "${command}"\n${USAGE}`);
        return 1;
    }
  } catch (err) {
    io.err(`error: ${err instanceof Error ? err.message : String(err)}\n`);
    return 1;
  }
}

/** `-o`: the formats a command accepts, the first being its default. */
function outputFormat(value: string | undefined, allowed: readonly string[]): string {
  const format = value ?? allowed[0] ?? '';
  if (!allowed.includes(format)) {
    throw new Error(`-o ${format}: unknown output format (one of ${allowed.join(', ')})`);
  }
  return format;
}

async function translateCommand(args: readonly string[], io: CliIo): Promise<number> {
  const { values } = parseArgs({
    args: [...args],
    options: {
      filename: { type: 'string', short: 'f', multiple: true },
      output: { type: 'string', short: 'o' },
      org: { type: 'string' },
      namespace: { type: 'string', short: 'n' },
    },
    strict: true,
  });
  const format = outputFormat(values.output, ['yaml', 'json']);
  const paths = values.filename ?? [];
  if (paths.length === 0) throw new Error('translate needs -f FILE (a manifest with svc resources)');
  const files: ManifestFile[] = [];
  for (const path of paths) {
    files.push({ path, text: path === '-' ? await readStdin() : await readFile(path, 'utf8') });
  }
  const result = translateManifests(files, {
    org: values.org ?? io.env.SVC_ORG ?? '',
    namespace: values.namespace ?? 'default',
  });
  if (result.errors.length > 0) {
    io.err(result.errors.map((e) => `error: ${e}\n`).join(''));
    return 1;
  }
  const items = result.objects.map((o) => ({
    source: o.source,
    call: o.call,
    id: o.id,
    body: o.body,
  }));
  io.out(
    format === 'json'
      ? `${JSON.stringify({ items }, null, 2)}\n`
      : items.map((i) => `---\n${stringify(i, { lineWidth: 0 })}`).join(''),
  );
  return 0;
}

/** The flags that say which gateway to ask. */
const targetOptions = {
  gateway: { type: 'string' },
  'secret-env': { type: 'string' },
  'operator-context': { type: 'string' },
  'operator-namespace': { type: 'string' },
  'operator-secret': { type: 'string' },
  kubeconfig: { type: 'string' },
} as const;

/** The values of targetOptions as gatewayTarget reads them. */
function targetFlags(values: { [K in keyof typeof targetOptions]?: string | undefined }): TargetFlags {
  return {
    gateway: values.gateway,
    secretEnv: values['secret-env'],
    operatorContext: values['operator-context'],
    operatorNamespace: values['operator-namespace'],
    operatorSecret: values['operator-secret'],
    kubeconfig: values.kubeconfig,
  };
}

async function explainCommand(args: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: [...args],
    options: {
      header: { type: 'string', short: 'H', multiple: true },
      key: { type: 'string' },
      'client-ip': { type: 'string' },
      output: { type: 'string', short: 'o' },
      ...targetOptions,
    },
    allowPositionals: true,
    strict: true,
  });
  const format = outputFormat(values.output, ['table', 'json']);
  const [method, url, ...extra] = positionals;
  if (method === undefined || url === undefined || extra.length > 0) {
    throw new Error('explain needs METHOD URL (for example: kubectl svc explain GET /orders/1)');
  }
  const headers: Record<string, string> = {};
  for (const h of values.header ?? []) {
    const at = h.indexOf(':');
    if (at <= 0) throw new Error(`-H ${h}: write a header as 'Name: value'`);
    headers[h.slice(0, at).trim()] = h.slice(at + 1).trim();
  }
  if (values.key !== undefined) headers.Authorization = values.key;
  const gw = await gatewayTarget(targetFlags(values), io.env);
  const res = await fetch(`${gw.url}/svc/explain`, {
    method: 'POST',
    headers: { 'x-svc-authorization': gw.secret, 'content-type': 'application/json' },
    body: JSON.stringify({
      method,
      url,
      headers,
      ...(values['client-ip'] === undefined ? {} : { client_ip: values['client-ip'] }),
    }),
  });
  const text = await res.text();
  if (res.status !== 200) {
    throw new Error(`gateway ${gw.url} answered ${res.status} to /svc/explain: ${text}`);
  }
  const explanation = JSON.parse(text) as ExplanationView;
  io.out(format === 'json' ? `${JSON.stringify(explanation, null, 2)}\n` : explanationTable(explanation));
  return 0;
}

async function statusCommand(args: readonly string[], io: CliIo): Promise<number> {
  const { values } = parseArgs({
    args: [...args],
    options: {
      namespace: { type: 'string', short: 'n' },
      'all-namespaces': { type: 'boolean', short: 'A' },
      output: { type: 'string', short: 'o' },
      kubeconfig: { type: 'string' },
    },
    strict: true,
  });
  const format = outputFormat(values.output, ['table', 'json']);
  const kc = new k8s.KubeConfig();
  if (values.kubeconfig !== undefined) kc.loadFromFile(values.kubeconfig);
  else kc.loadFromDefault();
  const namespace =
    values['all-namespaces'] === true
      ? undefined
      : (values.namespace ?? kc.getContextObject(kc.getCurrentContext())?.namespace ?? 'default');
  const { rows, denied } = await listStatus(kc, namespace);
  io.out(format === 'json' ? `${JSON.stringify({ items: rows }, null, 2)}\n` : statusTable(rows));
  for (const d of denied) io.err(`warning: ${d}\n`);
  return 0;
}

const DIFF_KINDS = [
  { kind: 'ApiDefinition', plural: 'apidefinitions', path: '/svc/apis/', idField: 'api_id' },
  { kind: 'SvcOasApiDefinition', plural: 'svcoasapidefinitions', path: '/svc/apis/oas/', idField: 'api_id' },
  { kind: 'SecurityPolicy', plural: 'securitypolicies', path: '/svc/policies/', idField: 'pol_id' },
] as const;

async function diffCommand(args: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args: [...args],
    options: {
      namespace: { type: 'string', short: 'n' },
      output: { type: 'string', short: 'o' },
      org: { type: 'string' },
      ...targetOptions,
    },
    allowPositionals: true,
    strict: true,
  });
  const format = outputFormat(values.output, ['table', 'json']);
  const [only] = positionals;
  const kc = new k8s.KubeConfig();
  if (values.kubeconfig !== undefined) kc.loadFromFile(values.kubeconfig);
  else kc.loadFromDefault();
  const namespace = values.namespace ?? kc.getContextObject(kc.getCurrentContext())?.namespace ?? 'default';
  const gw = await gatewayTarget(targetFlags(values), io.env);
  const api = kc.makeApiClient(k8s.CustomObjectsApi);
  interface Obj {
    apiVersion?: string;
    kind?: string;
    metadata: { name: string; namespace: string; [k: string]: unknown };
    spec?: unknown;
    status?: Record<string, unknown>;
  }
  const listed: { plural: string; path: string; idField: string; obj: Obj }[] = [];
  const configMaps: unknown[] = [];
  for (const k of DIFF_KINDS) {
    const list = (await api.listNamespacedCustomObject({
      group: 'svc.svc.io',
      version: 'v1alpha1',
      namespace,
      plural: k.plural,
    })) as { items?: Obj[] };
    for (const o of list.items ?? []) {
      if (only !== undefined && only.toLowerCase() !== `${k.kind}/${o.metadata.name}`.toLowerCase()) continue;
      listed.push({ plural: k.plural, path: k.path, idField: k.idField, obj: { ...o, kind: k.kind } });
    }
  }
  if (listed.some((l) => l.plural === 'svcoasapidefinitions')) {
    const core = kc.makeApiClient(k8s.CoreV1Api);
    const cms = await core.listNamespacedConfigMap({ namespace });
    for (const cm of cms.items) configMaps.push({ ...cm, apiVersion: 'v1', kind: 'ConfigMap' });
  }
  if (only !== undefined && listed.length === 0)
    throw new Error(`${only}: not found in namespace ${namespace}`);
  // The operator's translation of the whole namespace at once, so references resolve as there.
  const manifests = [
    ...listed.map((l) => ({ apiVersion: 'svc.svc.io/v1alpha1', ...l.obj, status: undefined })),
    ...configMaps,
  ];
  const translated = translateManifests(
    [{ path: 'cluster', text: manifests.map((m) => stringify(m)).join('---\n') }],
    {
      org: values.org ?? io.env.SVC_ORG ?? '',
      namespace,
    },
  );
  const entries: DiffEntry[] = [];
  for (const l of listed) {
    const id = typeof l.obj.status?.[l.idField] === 'string' ? (l.obj.status[l.idField] as string) : '';
    const res =
      id === ''
        ? undefined
        : await fetch(`${gw.url}${l.path}${encodeURIComponent(id)}`, {
            headers: { 'x-svc-authorization': gw.secret },
          });
    if (res !== undefined && res.status !== 200 && res.status !== 404) {
      throw new Error(`gateway ${gw.url} answered ${res.status} to GET ${l.path}${id}: ${await res.text()}`);
    }
    const have: unknown = res?.status === 200 ? await res.json() : undefined;
    const want = translated.objects.find(
      (o) => o.kind === l.obj.kind && o.name === l.obj.metadata.name,
    )?.body;
    const lastHash = l.obj.status?.latestSvcSpecHash;
    entries.push(
      compare(
        `${l.obj.kind}/${l.obj.metadata.name}`,
        id,
        typeof lastHash === 'string' ? lastHash : undefined,
        want,
        have,
      ),
    );
  }
  io.out(format === 'json' ? `${JSON.stringify({ items: entries }, null, 2)}\n` : diffText(entries));
  return entries.some((e) => e.state !== 'in sync') ? 1 : 0;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
