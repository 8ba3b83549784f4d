/**
 * The reference operator's portal samples (tools/reference-samples/samples.tsv:
 * config/samples/08-portal/01_apidescription.yaml and config/samples/portal/dcr.yaml), written
 * here in its own naming (group tyk.tyk.io) with their upstreams pointed at a local server, and
 * renamed as tools/reference-samples/measure.ts renames them.
 */
import { stringify } from 'yaml';
import { renameToSvc } from '../../tools/reference-samples/measure.ts';

type Obj = Record<string, unknown>;

/** Documents as one YAML stream, renamed to svc. */
const stream = (docs: Obj[]): string => docs.map((d) => stringify(renameToSvc(d))).join('---\n');

/** 08-portal/01_apidescription.yaml in `namespace`: an API, its policy, a keyless product, settings, a catalogue. */
export function portalSample(namespace: string, upstream: string): string {
  return stream([
    {
      apiVersion: 'tyk.tyk.io/v1alpha1',
      kind: 'ApiDefinition',
      metadata: { name: 'httpbin', namespace },
      spec: {
        name: 'httpbin protected',
        protocol: 'http',
        active: true,
        proxy: { target_url: upstream, listen_path: '/httpbin', strip_listen_path: true },
        use_standard_auth: true,
        auth_configs: { authToken: { auth_header_name: 'Authorization' } },
      },
    },
    {
      apiVersion: 'tyk.tyk.io/v1alpha1',
      kind: 'SecurityPolicy',
      metadata: { name: 'protect-api', namespace },
      spec: {
        name: 'Policy for portal catalogue',
        state: 'active',
        active: true,
        access_rights_array: [{ name: 'httpbin', namespace, versions: ['Default'] }],
      },
    },
    {
      apiVersion: 'tyk.tyk.io/v1alpha1',
      kind: 'APIDescription',
      metadata: { name: 'sample-portal-api', namespace },
      spec: {
        name: 'sample portal config',
        show: true,
        auth_type: 'keyless',
        version: 'v2',
        policyRef: { name: 'protect-api', namespace },
        docs: { documentation: 'https://httpbin.org/spec.json', doc_type: 'swagger_custom_url' },
      },
    },
    {
      apiVersion: 'tyk.tyk.io/v1alpha1',
      kind: 'PortalConfig',
      metadata: { name: 'sample-portal-config', namespace },
      spec: {},
    },
    {
      apiVersion: 'tyk.tyk.io/v1alpha1',
      kind: 'PortalAPICatalogue',
      metadata: { name: 'sample-portal-api', namespace },
      spec: { apis: [{ name: 'sample-portal-api', namespace }] },
    },
  ]);
}

/** portal/dcr.yaml's portal documents in `namespace`: a JWT product and settings with DCR on. */
export function dcrSample(namespace: string): string {
  return stream([
    {
      apiVersion: 'tyk.tyk.io/v1alpha1',
      kind: 'APIDescription',
      metadata: { name: 'sample-dcr-api', namespace },
      spec: {
        name: 'Sample DCR API',
        show: true,
        auth_type: 'jwt',
        policyRef: { name: 'protect-api', namespace },
        docs: { documentation: 'https://httpbin.org/spec.json', doc_type: 'swagger_custom_url' },
      },
    },
    {
      apiVersion: 'tyk.tyk.io/v1alpha1',
      kind: 'PortalConfig',
      metadata: { name: 'sample-dcr-config', namespace },
      spec: {
        enable_dcr: true,
        dcr_options: {
          provider: 'keycloak',
          grant_types: ['client_credentials'],
          response_types: ['code'],
          token_endpoint_auth_method: 'client_secret_post',
          idp_host: 'http://127.0.0.1:9',
          registration_endpoint: 'http://127.0.0.1:9/auth/realms/master/clients-registrations/openid-connect',
          access_token: 'an-initial-access-token',
        },
      },
    },
  ]);
}
