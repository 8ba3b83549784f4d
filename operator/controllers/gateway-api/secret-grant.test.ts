import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { GatewayInput, ReferenceGrantInput } from '../../translate/gateway-api.ts';
import { otherNamespaceSecretOf } from './secret-grant.ts';

const gateway = (certificateRefs: { name: string; namespace?: string }[]): GatewayInput => ({
  metadata: { name: 'edge', namespace: 'infra' },
  spec: {
    gatewayClassName: 'svc',
    listeners: [{ name: 'https', port: 8443, protocol: 'HTTPS', tls: { certificateRefs } }],
  },
});

const grant = (namespace: string, from: string, kind: string, name?: string): ReferenceGrantInput => ({
  metadata: { name: 'g', namespace },
  spec: {
    from: [{ group: 'gateway.networking.k8s.io', kind, namespace: from }],
    to: [{ group: '', kind: 'Secret', ...(name === undefined ? {} : { name }) }],
  },
});

const generated = { metadata: { namespace: 'infra', labels: { 'svc.io/gateway': 'edge' } } };

const cases: Record<
  string,
  {
    api?: { metadata: { namespace: string; labels?: Record<string, string> } };
    gateway?: GatewayInput;
    grants: ReferenceGrantInput[];
    refused?: RegExp;
  }
> = {
  'a grant of every Secret of the namespace': {
    gateway: gateway([{ name: 'tls', namespace: 'certs' }]),
    grants: [grant('certs', 'infra', 'Gateway')],
  },
  'a grant of that Secret by name': {
    gateway: gateway([{ name: 'tls', namespace: 'certs' }]),
    grants: [grant('certs', 'infra', 'Gateway', 'tls')],
  },
  'a grant of another Secret': {
    gateway: gateway([{ name: 'tls', namespace: 'certs' }]),
    grants: [grant('certs', 'infra', 'Gateway', 'other')],
    refused: /no listener of Gateway infra\/edge that a ReferenceGrant in namespace certs allows names it/,
  },
  'a grant from another namespace': {
    gateway: gateway([{ name: 'tls', namespace: 'certs' }]),
    grants: [grant('certs', 'elsewhere', 'Gateway')],
    refused: /ReferenceGrant/,
  },
  'a grant to HTTPRoutes': {
    gateway: gateway([{ name: 'tls', namespace: 'certs' }]),
    grants: [grant('certs', 'infra', 'HTTPRoute')],
    refused: /ReferenceGrant/,
  },
  'granted, but no listener of the Gateway names the Secret': {
    gateway: gateway([{ name: 'tls' }]),
    grants: [grant('certs', 'infra', 'Gateway')],
    refused: /no listener/,
  },
  'the API names a Gateway that does not exist': {
    grants: [grant('certs', 'infra', 'Gateway')],
    refused: /Gateway infra\/edge does not exist/,
  },
  'an API not generated for a Gateway': {
    api: { metadata: { namespace: 'infra' } },
    gateway: gateway([{ name: 'tls', namespace: 'certs' }]),
    grants: [grant('certs', 'infra', 'Gateway')],
    refused: /only an API generated for a Gateway/,
  },
};

test('an API serves a Secret of another namespace only for its Gateway, as a ReferenceGrant allows', async () => {
  for (const [name, c] of Object.entries(cases)) {
    const check = otherNamespaceSecretOf(c.api ?? generated, {
      gateway: (ns, n) => Promise.resolve(ns === 'infra' && n === 'edge' ? c.gateway : undefined),
      grants: (ns) => Promise.resolve(c.grants.filter((g) => g.metadata.namespace === ns)),
    });
    const refused = await check({
      path: 'spec.certificate_secret_names[0]',
      namespace: 'certs',
      name: 'tls',
    });
    if (c.refused === undefined) assert.equal(refused, undefined, name);
    else assert.match(refused ?? '', c.refused, name);
  }
});
