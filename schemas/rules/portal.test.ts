/**
 * The developer portal's model rules (schemas/rules/portal.ts), as tables: what the dashboard,
 * the portal kinds and streams' portal_webhook outputs take and refuse. Through the dashboard's
 * APIs: dashboard/portal/portal.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  developerNameProblem,
  emailProblem,
  isEventType,
  isHttpUrl,
  passwordProblem,
  portalDomainKey,
  portalDomainProblem,
} from './portal.ts';
import { planStreams } from './streams.ts';

describe('portal model rules', () => {
  const cases: { name: string; got: unknown; want: unknown }[] = [
    { name: 'event type', got: isEventType('order.created:v1'), want: true },
    { name: 'event type with a space', got: isEventType('not ok'), want: false },
    { name: 'event type too long', got: isEventType('e'.repeat(129)), want: false },
    { name: 'https URL', got: isHttpUrl('https://hooks.example.com/in'), want: true },
    { name: 'ftp URL', got: isHttpUrl('ftp://hooks.example.com/'), want: false },
    { name: 'relative URL', got: isHttpUrl('/in'), want: false },
    { name: 'e-mail', got: emailProblem('ada@dev.example'), want: undefined },
    { name: 'e-mail missing', got: emailProblem(undefined), want: 'Required value: an e-mail address' },
    { name: 'e-mail with a tab', got: emailProblem('ada\t@dev.example')?.startsWith('Invalid'), want: true },
    {
      name: 'e-mail of 255',
      got: emailProblem(`${'a'.repeat(243)}@dev.example`),
      want: 'Invalid value: at most 254 characters',
    },
    { name: 'password of 8', got: passwordProblem('12345678'), want: undefined },
    {
      name: 'password of 1025',
      got: passwordProblem('p'.repeat(1025)),
      want: 'Invalid value: at most 1024 characters',
    },
    { name: 'no name', got: developerNameProblem(undefined), want: undefined },
    { name: 'domain', got: portalDomainProblem('Portal.Example.com'), want: undefined },
    {
      name: 'domain with port and dot',
      got: portalDomainProblem('portal.example.com.:8443'),
      want: undefined,
    },
    { name: 'no domain', got: portalDomainProblem(''), want: undefined },
    { name: 'domain of a port', got: portalDomainProblem(':80') !== undefined, want: true },
    {
      name: 'domain label too long',
      got: portalDomainProblem(`${'a'.repeat(64)}.com`) !== undefined,
      want: true,
    },
    { name: 'domain key', got: portalDomainKey('Portal.Example.COM.:8443'), want: 'portal.example.com:8443' },
    {
      name: 'domain key without port',
      got: portalDomainKey('Portal.Example.COM.:8443', false),
      want: 'portal.example.com',
    },
    { name: 'domain key of IPv6', got: portalDomainKey('[::1]:3000', false), want: '[::1]' },
  ];
  for (const c of cases) {
    test(c.name, () => {
      assert.deepEqual(c.got, c.want);
    });
  }

  test("a stream's portal_webhook event type is one a product can list", () => {
    const doc = (event_type: string) => ({
      'x-svc-streaming': {
        streams: {
          s: {
            input: { http_server: { path: '/in' } },
            output: {
              portal_webhook: { event_type, portal_url: 'http://dashboard:3000/portal/a/webhooks/p' },
            },
          },
        },
      },
    });
    const at = 'x-svc-streaming.streams.s.output.portal_webhook.event_type';
    assert.deepEqual(
      planStreams('api', doc('order.created')).problems.filter((p) => p.path === at),
      [],
    );
    const bad = planStreams('api', doc('order created')).problems.filter((p) => p.path === at);
    assert.equal(bad.length, 1);
    assert.match(bad[0]?.message ?? '', /an event type \(letters, digits and \. _ : -\)/);
  });
});
