/**
 * `do_not_track`, `track_endpoints` and `do_not_track_endpoints` (and the OAS operations'
 * `trackEndpoint` and `doNotTrackEndpoint`) through a real listener: requests in, `/metrics`
 * scraped, series present or absent. On both entrances.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { oasDocument } from '../../schemas/testing.ts';
import { useEcho } from '../testing/echo.ts';
import { keyless, oneVersion, startGateway, type GatewayClient } from '../testing/harness.ts';
import { scrape } from './testing.ts';

const requests = (api: string, method: string, cls: string, endpoint?: string): string =>
  `svc_gateway_requests_total{api_id="${api}",${endpoint === undefined ? '' : `endpoint="${endpoint}",`}method="${method}",status_class="${cls}"}`;
const latencyCount = (api: string, endpoint?: string): string =>
  `svc_gateway_request_duration_seconds_count{api_id="${api}"${endpoint === undefined ? '' : `,endpoint="${endpoint}"`}}`;

/** Every series of the request metrics that names `api`. */
const seriesOf = (m: Map<string, number>, api: string): string[] =>
  [...m.keys()].filter((k) => k.startsWith('svc_gateway_request') && k.includes(`api_id="${api}"`));

type Json = Record<string, unknown>;

const tracked = oneVersion({
  extended_paths: {
    track_endpoints: [
      { path: '/users/{id}', method: 'GET' },
      { path: '/orders', method: 'POST' },
      { path: '/health', method: 'GET' },
      { path: '/off', method: 'GET', disabled: true },
    ],
    do_not_track_endpoints: [
      { path: '/health', method: 'GET' },
      { path: '/internal', method: 'GET' },
    ],
  },
});

/** An OAS API with one tracked and one untracked operation. */
const oasApi = (target: string): Json =>
  oasDocument(
    { id: 'pets', listenPath: '/pets-api/', target, strip: true },
    {
      middleware: {
        operations: {
          getPet: { trackEndpoint: { enabled: true } },
          ping: { doNotTrackEndpoint: { enabled: true } },
          listPets: { trackEndpoint: { enabled: false } },
        },
      },
    },
    {
      paths: {
        '/pets/{id}': { get: { operationId: 'getPet', responses: { 200: { description: 'ok' } } } },
        '/pets': { get: { operationId: 'listPets', responses: { 200: { description: 'ok' } } } },
        '/ping': { get: { operationId: 'ping', responses: { 200: { description: 'ok' } } } },
      },
    },
  );

async function get(gw: GatewayClient, path: string, method = 'GET'): Promise<void> {
  const res = await gw.request({
    method,
    path,
    fresh: true,
    ...(method === 'POST' ? { body: 'x' } : {}),
  });
  assert.equal(res.status, 200, `${method} ${path}: ${res.text}`);
}

describe('request metrics honour do_not_track and the tracking lists', () => {
  const echo = useEcho();

  for (const fastPath of [true, false]) {
    test(`fast path ${fastPath ? 'on' : 'off'}`, async () => {
      const gw = await startGateway({ argv: [`--fast-path=${String(fastPath)}`] });
      try {
        await gw.addApi(keyless('plain', '/plain/', echo().url));
        await gw.addApi(keyless('hidden', '/hidden/', echo().url, { do_not_track: true }));
        await gw.addApi(keyless('shown', '/shown/', echo().url, { do_not_track: false }));
        await gw.addApi(keyless('tr', '/tr/', echo().url, tracked));
        const oas = await gw.admin('POST', '/svc/apis/oas', oasApi(echo().url));
        assert.equal(oas.status, 200, oas.text);
        await gw.reload();

        await get(gw, '/plain/x');
        await get(gw, '/shown/x');
        for (let i = 0; i < 3; i++) await get(gw, '/hidden/x');
        await get(gw, '/tr/users/1');
        await get(gw, '/tr/users/2/');
        await get(gw, '/tr/users/3', 'POST'); // the entry is GET only
        await get(gw, '/tr/orders', 'POST');
        await get(gw, '/tr/other');
        await get(gw, '/tr/off');
        await get(gw, '/tr/health'); // in both lists: left out
        await get(gw, '/tr/internal/x');
        await get(gw, '/pets-api/pets/7');
        await get(gw, '/pets-api/pets');
        await get(gw, '/pets-api/ping');

        const m = await scrape(gw.port);
        assert.equal(m.get(requests('plain', 'GET', '2xx')), 1);
        assert.equal(m.get(requests('shown', 'GET', '2xx')), 1, 'do_not_track false counts');
        assert.deepEqual(seriesOf(m, 'hidden'), [], 'do_not_track: no series at all');

        assert.equal(m.get(requests('tr', 'GET', '2xx', '/users/{id}')), 2);
        assert.equal(m.get(requests('tr', 'POST', '2xx', '/orders')), 1);
        assert.equal(m.get(latencyCount('tr', '/users/{id}')), 2);
        assert.equal(m.get(latencyCount('tr', '/orders')), 1);
        assert.equal(m.get(requests('tr', 'POST', '2xx')), 1, 'another method: no endpoint label');
        assert.equal(m.get(requests('tr', 'GET', '2xx')), 2, '/other and the disabled /off');
        assert.equal(m.get(latencyCount('tr')), 3);
        assert.ok(
          seriesOf(m, 'tr').every((k) => !k.includes('/health') && !k.includes('/off')),
          'a left-out or disabled entry makes no series',
        );
        const trTotal = seriesOf(m, 'tr')
          .filter((k) => k.startsWith('svc_gateway_requests_total'))
          .reduce((n, k) => n + (m.get(k) ?? 0), 0);
        assert.equal(trTotal, 6, 'the /health and /internal requests are not counted');

        assert.equal(m.get(requests('pets', 'GET', '2xx', '/pets/{id}')), 1);
        assert.equal(m.get(requests('pets', 'GET', '2xx')), 1, 'listPets: trackEndpoint not enabled');
        assert.equal(m.get(latencyCount('pets')), 1, 'ping: doNotTrackEndpoint');
      } finally {
        await gw.stop();
      }
    });
  }
});
