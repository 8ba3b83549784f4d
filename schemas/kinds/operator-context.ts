import type { KindDefinition } from '../json-schema.ts';
import {
  ageColumn,
  apiResourceRef,
  namespacedRef,
  readyColumn,
  reconcileStatusProperties,
} from '../common.ts';
import { closedObject, strings } from '../models/builders.ts';

/** OperatorContext: which gateway or dashboard, organization and identity resources use. */
export const operatorContextKind: KindDefinition = {
  kind: 'OperatorContext',
  plural: 'operatorcontexts',
  singular: 'operatorcontext',
  shortNames: ['svcctx', 'opctx'],
  description:
    'Isolated connection parameters: which gateway or dashboard, which organization, which user identity. Resources choose one with `contextRef`; fields left unset come from the Secret named by `secretRef`.',
  spec: closedObject(
    {
      title: 'OperatorContextSpec',
      description: 'Connection parameters.',
      'x-kubernetes-validations': [
        {
          rule: 'has(self.env) || has(self.secretRef) || has(self.fromSecret)',
          message: 'set env, secretRef, or both',
          reason: 'FieldValueRequired',
        },
      ],
    },
    {
      env: closedObject(
        {
          title: 'OperatorContextEnv',
          description: 'Connection settings. Each field left unset is read from the Secret in `secretRef`.',
        },
        {
          mode: {
            type: 'string',
            enum: ['ce', 'pro'],
            description:
              '`ce`: talk to a gateway (open source). `pro`: talk to a dashboard (licensed). Secret key SVC_MODE.',
          },
          url: {
            type: 'string',
            pattern: '^https?://',
            description: 'Management URL of the gateway or dashboard. Secret key SVC_URL.',
          },
          auth: {
            type: 'string',
            description:
              'API key of the operator user (the gateway secret in mode ce). Prefer the Secret key SVC_AUTH over a value here.',
          },
          org: { type: 'string', description: 'Organization ID of the operator user. Secret key SVC_ORG.' },
          insecureSkipVerify: {
            type: 'boolean',
            description:
              "Don't verify the TLS certificate of `url` (self-signed certificates). Secret key SVC_TLS_INSECURE_SKIP_VERIFY.",
          },
          licenseKey: {
            type: 'string',
            description: 'License key, required in mode pro (JWT form). Secret key SVC_OPERATOR_LICENSEKEY.',
          },
          ingress: closedObject(
            { title: 'IngressPorts', description: 'Ports of APIs created from Ingress resources.' },
            {
              httpPort: {
                type: 'integer',
                minimum: 0,
                maximum: 65535,
                description: 'Listen port for HTTP ingress (default 8080). Secret key SVC_HTTP_INGRESS_PORT.',
              },
              httpsPort: {
                type: 'integer',
                minimum: 0,
                maximum: 65535,
                description:
                  'Listen port for HTTPS ingress (default 8443). Secret key SVC_HTTPS_INGRESS_PORT.',
              },
            },
          ),
          user_owners: strings(
            'Dashboard user IDs that own the objects created through this context (mode pro).',
          ),
          user_group_owners: strings(
            'Dashboard user group IDs that own the objects created through this context (mode pro).',
          ),
        },
      ),
      secretRef: namespacedRef(
        'a Secret whose keys (SVC_MODE, SVC_URL, SVC_AUTH, SVC_ORG, SVC_TLS_INSECURE_SKIP_VERIFY, SVC_OPERATOR_LICENSEKEY, SVC_HTTP_INGRESS_PORT, SVC_HTTPS_INGRESS_PORT) fill the `env` fields left unset',
      ),
      fromSecret: {
        ...namespacedRef('a Secret'),
        description:
          "Deprecated: the reference operator's earlier name of secretRef, read the same way. The mutating webhook moves it to secretRef with a warning; set beside a secretRef naming another Secret, it is refused.",
      },
    },
  ),
  status: closedObject(
    {
      title: 'OperatorContextStatus',
      description: 'Resources that use this context, written by the operator.',
    },
    {
      linked_apis: {
        type: 'array',
        items: apiResourceRef,
        description: 'API resources whose contextRef names this context.',
      },
      linked_security_policies: {
        type: 'array',
        items: namespacedRef('a SecurityPolicy'),
        description: 'SecurityPolicies whose contextRef names this context.',
      },
      ...reconcileStatusProperties,
    },
  ),
  printerColumns: [
    {
      name: 'Mode',
      type: 'string',
      jsonPath: '.spec.env.mode',
      description: 'ce (gateway) or pro (dashboard).',
    },
    { name: 'URL', type: 'string', jsonPath: '.spec.env.url', description: 'Management URL.' },
    readyColumn,
    ageColumn,
  ],
};
