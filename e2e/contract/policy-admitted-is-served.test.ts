/**
 * The contract for policies: a SecurityPolicy the webhooks admit is never refused by the gateway.
 * Every SecurityPolicy of examples/ and every input of the translator's golden tests goes
 * through the webhooks' defaulting and validation, the operator's translation, and the check the
 * gateway runs on `POST /svc/policies` (its policy model, then schemas/rules/access.ts). A table
 * of limits and patterns checks that the two sides give the same verdict. Pure functions only.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { API_VERSION } from '../../schemas/common.ts';
import { policyProblems } from '../../gateway/admin/policies.ts';
import { derivedId } from '../../operator/ids.ts';
import { goldenInputs } from '../../operator/translate/golden.ts';
import {
  translateSecurityPolicy,
  type SecurityPolicyInput,
} from '../../operator/translate/security-policy.ts';
import { formatFieldError } from '../../webhooks/field-error.ts';
import { memoryLookups } from '../../webhooks/memory-lookups.ts';
import { defaultSecurityPolicy } from '../../webhooks/security-policy.default.ts';
import { validateSecurityPolicy } from '../../webhooks/security-policy.validate.ts';
import { securityPolicy } from '../../webhooks/testing.ts';

const root = path.join(import.meta.dirname, '..', '..');

/** The webhooks' verdict (their errors), and the gateway's on what the operator would write. */
async function throughEveryPart(
  manifest: SecurityPolicyInput,
): Promise<{ webhooks: string[]; gateway: string[] }> {
  const obj = defaultSecurityPolicy({ apiVersion: API_VERSION, kind: 'SecurityPolicy', ...manifest });
  const verdict = await validateSecurityPolicy(obj, undefined, memoryLookups([]));
  const cr = obj as SecurityPolicyInput;
  const translated = translateSecurityPolicy(cr, {
    polId: cr.spec.id ?? derivedId(cr.metadata.namespace, cr.metadata.name),
    orgId: 'org-1',
    apiId: (ref) => derivedId(ref.namespace, ref.name),
  });
  return { webhooks: verdict.errors.map(formatFieldError), gateway: policyProblems(translated) };
}

/** Every SecurityPolicy the project ships or tests translation with. */
async function corpus(): Promise<{ name: string; manifest: SecurityPolicyInput }[]> {
  const out: { name: string; manifest: SecurityPolicyInput }[] = [];
  const examples = await readFile(path.join(root, 'examples', 'security-policy.yaml'), 'utf8');
  for (const doc of parseAllDocuments(examples)) {
    const m = doc.toJS() as SecurityPolicyInput & { kind: string };
    // The file also holds an ApiKey that uses the policy.
    if (m.kind !== 'SecurityPolicy') continue;
    out.push({ name: `examples/security-policy.yaml ${m.metadata.name}`, manifest: m });
  }
  for (const { file, input } of await goldenInputs('security-policy')) {
    out.push({ name: file, manifest: input as SecurityPolicyInput });
  }
  return out;
}

describe('a policy the webhooks admit is never refused by the gateway', async () => {
  const all = await corpus();
  test('the corpus has the examples and the golden inputs', () => {
    assert.ok(all.length >= 4, all.map((c) => c.name).join(', '));
  });
  for (const { name, manifest } of all) {
    test(name, async () => {
      const { webhooks, gateway } = await throughEveryPart(manifest);
      assert.deepEqual(webhooks, [], 'admitted');
      assert.deepEqual(gateway, [], 'admitted, so the gateway stores it');
    });
  }
});

describe('the webhooks and the gateway give the same verdict', () => {
  const right = (extra: Record<string, unknown>): Record<string, unknown> => ({
    access_rights_array: [{ name: 'orders', ...extra }],
  });
  const specs: { name: string; spec: Record<string, unknown>; stored: boolean }[] = [
    { name: 'rate and per', spec: { rate: 10, per: 60 }, stored: true },
    { name: 'rate without per', spec: { rate: 10 }, stored: false },
    { name: 'a quota without its period', spec: { quota_max: 100 }, stored: false },
    { name: 'a quota and its period', spec: { quota_max: 100, quota_renewal_rate: 3600 }, stored: true },
    {
      name: 'throttling with a rate',
      spec: { rate: 1, per: 1, throttle_interval: 1, throttle_retry_limit: 2 },
      stored: true,
    },
    { name: 'a per-API rate without per', spec: right({ limit: { rate: 5 } }), stored: false },
    { name: 'a per-API quota without its period', spec: right({ limit: { quota_max: 5 } }), stored: false },
    { name: 'a per-API limit', spec: right({ limit: { rate: 5, per: 1 } }), stored: true },
    {
      name: 'allowed URLs',
      spec: right({ allowed_urls: [{ url: '/orders/(.*)', methods: ['GET'] }] }),
      stored: true,
    },
    {
      name: 'an allowed URL that does not compile',
      spec: right({ allowed_urls: [{ url: '/orders/(', methods: ['GET'] }] }),
      stored: false,
    },
    {
      name: 'an endpoint path that does not compile',
      spec: right({
        endpoints: [{ path: '/users(', methods: [{ name: 'GET', limit: { rate: 1, per: 1 } }] }],
      }),
      stored: false,
    },
    {
      name: 'per-endpoint limits',
      spec: right({
        endpoints: [{ path: '/users', methods: [{ name: 'GET', limit: { rate: 1, per: 1 } }] }],
      }),
      stored: true,
    },
    { name: 'state draft', spec: { state: 'draft' }, stored: true },
    // The boundary values of schemas/rules/limits.ts: -1 is off, 0 is refused, pairs go together.
    {
      name: 'every limit -1 (off)',
      spec: {
        rate: -1,
        per: -1,
        throttle_interval: -1,
        throttle_retry_limit: -1,
        quota_max: -1,
        quota_renewal_rate: -1,
      },
      stored: true,
    },
    { name: 'rate 0', spec: { rate: 0, per: 60 }, stored: false },
    { name: 'per 0', spec: { rate: 10, per: 0 }, stored: false },
    { name: 'a window with the rate off', spec: { rate: -1, per: 60 }, stored: false },
    { name: 'quota_max 0', spec: { quota_max: 0, quota_renewal_rate: 3600 }, stored: false },
    { name: 'quota off, any period', spec: { quota_max: -1, quota_renewal_rate: 0 }, stored: true },
    {
      name: 'throttle interval without retries',
      spec: { rate: 1, per: 1, throttle_interval: 1, throttle_retry_limit: -1 },
      stored: false,
    },
    {
      name: 'throttle retries without interval',
      spec: { rate: 1, per: 1, throttle_interval: -1, throttle_retry_limit: 3 },
      stored: false,
    },
    {
      name: 'retrying without waiting (throttle_interval 0: a warning)',
      spec: { rate: 1, per: 1, throttle_interval: 0, throttle_retry_limit: 3 },
      stored: true,
    },
    {
      name: 'throttle values 0 (off, with warnings)',
      spec: { rate: 1, per: 1, throttle_interval: 0, throttle_retry_limit: 0 },
      stored: true,
    },
    { name: 'a per-API rate 0', spec: right({ limit: { rate: 0, per: 1 } }), stored: false },
    {
      name: 'a per-API quota_max 0',
      spec: right({ limit: { quota_max: 0, quota_renewal_rate: 60 } }),
      stored: false,
    },
    {
      name: 'a per-API throttle without retries',
      spec: right({ limit: { rate: 1, per: 1, throttle_interval: 1, throttle_retry_limit: -1 } }),
      stored: false,
    },
    {
      name: 'a per-API limit all -1',
      spec: right({ limit: { rate: -1, per: -1, quota_max: -1 } }),
      stored: true,
    },
  ];
  for (const c of specs) {
    test(c.name, async () => {
      const { webhooks, gateway } = await throughEveryPart(
        securityPolicy('plan', c.spec) as unknown as SecurityPolicyInput,
      );
      assert.equal(webhooks.length === 0, c.stored, `webhooks: ${webhooks.join('; ')}`);
      assert.equal(gateway.length === 0, c.stored, `gateway: ${gateway.join('; ')}`);
    });
  }
});
