import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { ApiObject } from '../objects.ts';
import { gatewaysForApiEvent } from './retry.ts';
import type { GatewayObject } from './types.ts';

const api = (name: string, path: string, owner?: string): ApiObject =>
  ({
    apiVersion: 'svc.svc.io/v1alpha1',
    kind: 'ApiDefinition',
    metadata: { name, namespace: 'apps', ...(owner ? { labels: { 'svc.io/gateway': owner } } : {}) },
    spec: { name, use_keyless: true, proxy: { listen_path: path, target_url: 'http://x' } },
  }) as unknown as ApiObject;

const gateway = (
  name: string,
  programmed?: { status: string; reason: string; message: string },
): GatewayObject =>
  ({
    metadata: { name, namespace: 'apps' },
    spec: { gatewayClassName: 'svc', listeners: [] },
    ...(programmed ? { status: { conditions: [{ type: 'Programmed', ...programmed }] } } : {}),
  }) as GatewayObject;

const refused = gateway('refused', {
  status: 'False',
  reason: 'Invalid',
  message: 'ApiDefinition apps/refused-1234: listen path / is already claimed by ApiDefinition apps/other',
});
const pending = gateway('pending', {
  status: 'False',
  reason: 'Pending',
  message: '1 of 2 APIs not yet served',
});
const fine = gateway('fine', { status: 'True', reason: 'Programmed', message: '2 APIs served' });
const all = [refused, pending, fine];

test('an API that frees its route queues the Gateways whose writes were refused, and its owner', () => {
  const mine = api('edge-1', '/', 'edge');
  assert.deepEqual(gatewaysForApiEvent('delete', mine, undefined, all, true).sort(), [
    'apps/edge',
    'apps/refused',
  ]);
  // Someone's own ApiDefinition deleted, or moved to another path: the same retry.
  assert.deepEqual(gatewaysForApiEvent('delete', api('own', '/'), undefined, all, false), ['apps/refused']);
  assert.deepEqual(gatewaysForApiEvent('update', api('own', '/v2'), api('own', '/'), all, false), [
    'apps/refused',
  ]);
});

test('an API that keeps its route queues only its owner (when its view changed)', () => {
  assert.deepEqual(gatewaysForApiEvent('update', api('own', '/'), api('own', '/'), all, false), []);
  assert.deepEqual(gatewaysForApiEvent('add', api('own', '/'), undefined, all, false), []);
  assert.deepEqual(gatewaysForApiEvent('update', api('e', '/', 'edge'), api('e', '/', 'edge'), all, true), [
    'apps/edge',
  ]);
});
