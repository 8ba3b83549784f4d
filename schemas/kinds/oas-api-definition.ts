import type { JsonSchema, KindDefinition } from '../json-schema.ts';
import type { PrinterColumn } from '../json-schema.ts';
import { apiPrinterColumns, apiSecretName, apiStatus, contextRef, k8sName, k8sNamespace } from '../common.ts';
import { closedObject } from '../models/builders.ts';

/** A key of a ConfigMap that holds an OAS document. */
export const configMapKeyRef = (what: string): JsonSchema =>
  closedObject(
    {
      title: 'ConfigMapKeyRef',
      description: `ConfigMap key that holds ${what}.`,
      required: ['name', 'keyName'],
    },
    {
      name: { ...k8sName, description: 'Name of the ConfigMap.' },
      namespace: {
        ...k8sNamespace,
        description: 'Namespace of the ConfigMap. Defaults to the namespace of the API resource.',
      },
      keyName: {
        type: 'string',
        minLength: 1,
        maxLength: 253,
        pattern: '^[-._a-zA-Z0-9]+$',
        description: "Key in the ConfigMap's `data` whose value is the document (JSON or YAML).",
      },
    },
  );

/**
 * The status of an OAS API (and of a streams API, an OAS document too): the API kinds' status, plus
 * what the document says and its ConfigMap's hash.
 */
export function oasApiStatus(): JsonSchema {
  return {
    ...apiStatus,
    title: 'OasApiStatus',
    properties: {
      ...apiStatus.properties,
      target_url: {
        type: 'string',
        description: 'Upstream URL of the API (`x-svc-api-gateway.upstream.url`).',
      },
      enabled: {
        type: 'boolean',
        description: 'Whether the gateway serves the API (`x-svc-api-gateway.info.state.active`).',
      },
      latestConfigMapHash: {
        type: 'string',
        description: 'Hash of the ConfigMap key the document pushed last came from.',
      },
    },
  };
}

/** The API kinds' columns, with the upstream and whether the API is enabled after the listen path. */
export function oasPrinterColumns(): readonly PrinterColumn[] {
  const shared = apiPrinterColumns('.status.listen_path');
  return [
    ...shared.slice(0, 2),
    {
      name: 'Target URL',
      type: 'string',
      jsonPath: '.status.target_url',
      description: 'Upstream URL of the API.',
    },
    {
      name: 'Enabled',
      type: 'boolean',
      jsonPath: '.status.enabled',
      description: 'Whether the gateway serves the API.',
    },
    ...shared.slice(2),
  ];
}

/** A Secret named by an OAS API's certificate fields (in the API's namespace). */

/** An upstream host as the document's domain mappings write it. */
const upstreamDomain: JsonSchema = {
  type: 'string',
  minLength: 1,
  maxLength: 253,
  description: 'Upstream host: api.example.com, *.example.com for its subdomains, or * for any.',
};

/** A list keyed by upstream host (`domain`), each host with its `field`. */
const perUpstreamHost = (description: string, field: string, value: JsonSchema): JsonSchema => ({
  type: 'array',
  maxItems: 100,
  'x-kubernetes-list-type': 'map',
  'x-kubernetes-list-map-keys': ['domain'],
  description,
  items: closedObject({ required: ['domain', field] }, { domain: upstreamDomain, [field]: value }),
});

/**
 * Certificates named by Secret, the reference's TykOasApiDefinition forms: the operator reads the
 * Secrets and writes what they hold into the document's `x-svc-api-gateway` before pushing it
 * (`server.clientCertificates`, `upstream.mutualTLS`, `upstream.certificatePinning`,
 * `server.customDomain`). The document
 * itself names certificates by gateway ID only, as the reference's does.
 */
export const oasCertificateRefs: Record<string, JsonSchema> = {
  clientCertificate: closedObject(
    {
      title: 'OasClientCertificate',
      description:
        "Static mutual TLS with client certificates from Secrets: `enabled` is written into the document's `x-svc-api-gateway.server.clientCertificates.enabled` (over what the document says) and each Secret's certificate, uploaded by the operator, is added to its `allowlist`. Served on the gateway's HTTPS port (`https_port`): OAS documents name no port, and the gateway port is plain HTTP.",
      required: ['enabled'],
    },
    {
      enabled: { type: 'boolean', description: 'Whether static mutual TLS is on.' },
      allowlist: {
        type: 'array',
        maxItems: 100,
        items: apiSecretName,
        description:
          'Secrets (type kubernetes.io/tls, with tls.crt and tls.key, in the namespace of the API) whose certificates are allowed.',
      },
    },
  ),
  mutualTLS: closedObject(
    {
      title: 'OasUpstreamMutualTls',
      description:
        "Upstream mutual TLS with certificates from Secrets: `enabled` is written into the document's `x-svc-api-gateway.upstream.mutualTLS.enabled` and each mapping, its Secret uploaded by the operator, is added to `domainToCertificateMapping` (a domain the document maps too is refused: an upstream host is presented one certificate).",
      required: ['enabled'],
    },
    {
      enabled: { type: 'boolean', description: 'Whether upstream mutual TLS is on.' },
      domainToCertificateMapping: perUpstreamHost(
        'Upstream host -> the Secret whose certificate and key the gateway presents to it.',
        'certificateRef',
        {
          ...apiSecretName,
          description:
            'Secret (type kubernetes.io/tls, with tls.crt and tls.key, in the namespace of the API) presented to the host.',
        },
      ),
    },
  ),
  customDomain: closedObject(
    {
      title: 'OasCustomDomainRef',
      description:
        "The custom domain, with its certificates from Secrets: `enabled` is written into the document's `x-svc-api-gateway.server.customDomain.enabled` (over what the document says), `name` (when set) over its name, and each Secret's certificate, uploaded by the operator, is added to its `certificates`. An API with certificates for its domain is served over HTTPS on the gateway's HTTPS port (`https_port`), the certificate chosen by the client's server name (SNI).",
      required: ['enabled'],
    },
    {
      enabled: { type: 'boolean', description: 'Whether the API is bound to its custom domain.' },
      name: {
        type: 'string',
        minLength: 1,
        maxLength: 253,
        description:
          "The domain, such as api.example.com (over the document's `server.customDomain.name`); unset: the document's.",
      },
      certificatesRef: {
        type: 'array',
        maxItems: 100,
        items: apiSecretName,
        description:
          'Secrets (type kubernetes.io/tls, with tls.crt and tls.key, in the namespace of the API) whose certificates are served for the domain.',
      },
    },
  ),
  certificatePinning: closedObject(
    {
      title: 'OasCertificatePinning',
      description:
        "Certificate pinning with public keys from Secrets: `enabled` is written into the document's `x-svc-api-gateway.upstream.certificatePinning.enabled` and each Secret's tls.crt public key, as a sha256/ pin, is added to the host's `publicKeys` in `domainToPublicKeysMapping` (nothing is uploaded).",
      required: ['enabled'],
    },
    {
      enabled: { type: 'boolean', description: 'Whether certificate pinning is on.' },
      domainToPublicKeysMapping: perUpstreamHost(
        'Upstream host -> the Secrets whose public keys it may present.',
        'publicKeyRefs',
        {
          type: 'array',
          minItems: 1,
          maxItems: 20,
          items: apiSecretName,
          description:
            'Secrets (in the namespace of the API) whose tls.crt certificate holds a public key the host may present.',
        },
      ),
    },
  ),
};

/** SvcOasApiDefinition: an API described by an OAS document kept in a ConfigMap. */
export const oasApiDefinitionKind: KindDefinition = {
  kind: 'SvcOasApiDefinition',
  plural: 'svcoasapidefinitions',
  singular: 'svcoasapidefinition',
  shortNames: ['svcoas'],
  description:
    'An API described by an OpenAPI 3.x document with the `x-svc-api-gateway` extension, kept in a ConfigMap. Recommended for standard HTTP APIs. A change to the ConfigMap is reconciled.',
  spec: closedObject(
    { title: 'SvcOasApiDefinitionSpec', description: 'Desired state of the API.', required: ['svcOAS'] },
    {
      contextRef,
      svcOAS: closedObject(
        { title: 'SvcOasRef', description: 'Where the OAS document is.', required: ['configmapRef'] },
        {
          configmapRef: configMapKeyRef('the OAS document (at most 1 MiB)'),
        },
      ),
      ...oasCertificateRefs,
    },
  ),
  status: oasApiStatus(),
  printerColumns: oasPrinterColumns(),
};
