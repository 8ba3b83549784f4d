import type { JsonSchema, KindDefinition } from '../json-schema.ts';
import {
  apiPrinterColumns,
  apiSecretName,
  apiStatus,
  contextAlias,
  contextRef,
  resourceRef,
} from '../common.ts';
import { apiDefinitionModel, classicApiProperties, proxy } from '../models/api-definition/index.ts';
import { KEYED_FLAGS } from '../rules/auth.ts';
import { objectIdSchema } from '../rules/ids.ts';
import { closedObject } from '../models/builders.ts';

const gatewayField = (name: string): JsonSchema => apiDefinitionModel.properties?.[name] ?? {};

/**
 * `proxy` as the resource states it: a template (labelled `svc.io/template: "true"`) has no
 * listen path, its Ingresses supply it, so the CRD leaves `listen_path` optional and the webhook
 * requires it of every other ApiDefinition (`checkClassicApi`, as the gateway does).
 */
const { required: _listenPathRequired, ...resourceProxy } = proxy;

/**
 * `graphql` as the resource states it: `graph_ref` names a SubGraph or SuperGraph of the API's
 * namespace, which the operator writes into the gateway's inline form (the gateway itself knows
 * no graphs by name and refuses the field).
 */
const gatewayGraphql = classicApiProperties.graphql ?? {};
const resourceGraphql: JsonSchema = {
  ...gatewayGraphql,
  properties: {
    ...gatewayGraphql.properties,
    graph_ref: {
      type: 'string',
      'x-svc-support': 'supported',
      description:
        'With execution_mode subgraph: the SubGraph this API serves; with supergraph: the SuperGraph it serves. By name, in the namespace of the API. The operator writes its SDL (subgraph.sdl) or its composition and subgraph APIs (supergraph.subgraphs, merged_sdl) into the API, and waits (Ready False, SubGraphNotFound or SuperGraphNotFound) until it exists.',
    },
  },
};

/** ApiDefinition: a classic-format API (TCP, GraphQL, universal data graph, plain HTTP). */
export const apiDefinitionKind: KindDefinition = {
  kind: 'ApiDefinition',
  plural: 'apidefinitions',
  singular: 'apidefinition',
  shortNames: ['svcapi', 'apidef'],
  description:
    'A classic-format API served by the gateway. Recommended for non-HTTP APIs (TCP, GraphQL, universal data graph); use SvcOasApiDefinition for standard HTTP APIs.',
  spec: closedObject(
    {
      title: 'ApiDefinitionSpec',
      description: 'Desired state of the API.',
      required: ['name', 'proxy'],
      'x-kubernetes-validations': [
        {
          rule: `!(has(self.use_keyless) && self.use_keyless) || !(${KEYED_FLAGS.map((f) => `(has(self.${f}) && self.${f})`).join(' || ')})`,
          message: `use_keyless excludes authentication: set use_keyless to false, or turn off ${KEYED_FLAGS.join(', ')} (use_mutual_tls_auth may stay on: a certificate-only API)`,
          fieldPath: '.use_keyless',
          reason: 'FieldValueForbidden',
        },
        // proxy.target_url is required by the webhook and the gateway (checkClassicApi), not here:
        // a template has none (its Ingresses supply it).
        {
          rule: "!has(self.listen_port) || self.listen_port == 0 || (has(self.protocol) && self.protocol != '')",
          message: 'listen_port needs a protocol (http, https, tcp or tls)',
          fieldPath: '.protocol',
          reason: 'FieldValueRequired',
        },
        {
          rule: "!has(self.enable_jwt) || !self.enable_jwt || (has(self.jwt_signing_method) && has(self.jwt_source) && self.jwt_source != '')",
          message: 'enable_jwt needs jwt_signing_method and jwt_source',
          fieldPath: '.jwt_source',
          reason: 'FieldValueRequired',
        },
      ],
    },
    {
      api_id: {
        'x-svc-support': 'supported',
        ...objectIdSchema(
          'Adopts the existing API with this ID. When omitted the ID is derived from the namespaced name (unpadded base64url of `namespace/name`), so a re-created resource gets the same ID and its keys keep working.',
        ),
      },
      contextRef: { ...contextRef, 'x-svc-support': 'supported' },
      context: { ...contextAlias, 'x-svc-support': 'supported' },
      org_id: {
        'x-svc-support': 'supported',
        type: 'string',
        description:
          'Ignored: the operator sets the organisation from its settings or the OperatorContext (kept so that manifests that set it apply as they are).',
      },
      ...classicApiProperties,
      graphql: resourceGraphql,
      proxy: resourceProxy,
      client_certificates: gatewayField('client_certificates'),
      upstream_certificates: gatewayField('upstream_certificates'),
      pinned_public_keys: gatewayField('pinned_public_keys'),
      jwt_scope_to_policy_mapping: gatewayField('jwt_scope_to_policy_mapping'),
      certificates: {
        'x-svc-support': 'not-supported',
        'x-svc-reason':
          'a resource names Secrets, not certificate IDs of the gateway: list them in `certificate_secret_names`',
        type: 'array',
        items: { type: 'string' },
        description:
          'Gateway certificate IDs served on this API, as the reference writes them (not supported yet in the resource: name the Secrets in certificate_secret_names).',
      },
      certificate_secret_names: {
        'x-svc-support': 'supported',
        type: 'array',
        items: { type: 'string', minLength: 1 },
        description:
          'Secrets (type kubernetes.io/tls, in the namespace of the API) whose certificates the API serves. `namespace/name` names a Secret of another namespace: served only by an API the operator generated for a Gateway (label svc.io/gateway) whose HTTPS listener names that Secret and a ReferenceGrant in its namespace allows it; an API without that label naming one is refused at admission (Forbidden), and a labelled API the grant does not allow is Ready=False, RefNotPermitted.',
      },
      client_certificate_refs: {
        'x-svc-support': 'supported',
        type: 'array',
        items: apiSecretName,
        description:
          'Secrets (type kubernetes.io/tls, in the namespace of the API) whose certificates static mutual TLS (use_mutual_tls_auth) allows: the operator uploads each certificate and adds its ID to client_certificates.',
      },
      upstream_certificate_refs: {
        'x-svc-support': 'supported',
        type: 'object',
        additionalProperties: apiSecretName,
        description:
          'Upstream host (api.example.com, *.example.com, or * for any) -> Secret (type kubernetes.io/tls, in the namespace of the API) whose certificate and key the gateway presents to that upstream: the operator uploads it and sets its ID in upstream_certificates.',
      },
      pinned_public_keys_refs: {
        'x-svc-support': 'supported',
        type: 'object',
        additionalProperties: apiSecretName,
        description:
          'Upstream host (api.example.com, *.example.com, or * for any) -> Secret (in the namespace of the API) whose tls.crt, a certificate or a PEM public key (openssl x509 -pubkey -noout), holds the public key the upstream must present: the operator adds its pin (sha256/ and the base64 SHA-256 of the SubjectPublicKeyInfo) to pinned_public_keys.',
      },
      jwt_default_policies: {
        'x-svc-support': 'supported',
        type: 'array',
        items: resourceRef('A SecurityPolicy'),
        description:
          'SecurityPolicies applied when a token has no policy claim, each as "namespace/name" (or "name") or {name, namespace}.',
      },
    },
  ),
  status: apiStatus,
  printerColumns: apiPrinterColumns('.spec.proxy.listen_path'),
};
