/**
 * SvcStreamsApiDefinition end to end: a real control plane, a gateway process running its streams
 * on Bento, and the operator as a process. The streams document lives in a ConfigMap: a message
 * POSTed through the gateway reaches a server-sent events consumer; the ConfigMap edited to add a
 * Bloblang mapping, the next message arrives transformed; the resource deleted, its streams go.
 */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { derivedId } from '../../operator/ids.ts';
import { openSse, type SseConsumer } from '../../gateway/streams/testing.ts';
import { httpRequest, waitFor } from '../harness/processes.ts';
import { applyManifest, startWorld, stopWorld, type OperatorWorld, waitReady } from './helpers.ts';

const ID = derivedId('events', 'orders');

let w: OperatorWorld;

before(async () => {
  w = await startWorld({
    name: 'streams',
    namespaces: ['events'],
    gatewayEnv: { SVC_GW_STREAMING_ENABLED: 'true' },
    operator: { env: { WATCH_NAMESPACE: 'events,default' } },
  });
});

after(() => stopWorld(w));

/** The ConfigMap `events/orders-streams` with a streams document; `mapping` transforms messages. */
function configMap(mapping?: string): string {
  const doc = {
    openapi: '3.0.3',
    info: { title: 'Orders', version: '1.0.0' },
    paths: {},
    'x-svc-api-gateway': {
      info: { name: 'orders', state: { active: true } },
      upstream: { url: w.upstream.url },
      server: { listenPath: { value: '/orders/', strip: true } },
    },
    'x-svc-streaming': {
      streams: {
        relay: {
          input: { http_server: { path: '/post' } },
          ...(mapping === undefined ? {} : { pipeline: { processors: [{ mapping }] } }),
          output: { http_server: { stream_path: '/sse', stream_format: 'event_source', heartbeat: '1s' } },
        },
      },
    },
  };
  return `apiVersion: v1
kind: ConfigMap
metadata: {name: orders-streams, namespace: events}
data:
  streams.json: ${JSON.stringify(JSON.stringify(doc))}
`;
}

const streamsApi = `apiVersion: svc.svc.io/v1alpha1
kind: SvcStreamsApiDefinition
metadata: {name: orders, namespace: events}
spec:
  svcStreams:
    configmapRef: {name: orders-streams, keyName: streams.json}
`;

/** Posts `body` to the stream's input through the gateway until it is taken (200). */
async function publish(body: string): Promise<void> {
  const r = await httpRequest(`${w.gw.url}/orders/post`, { method: 'POST', body });
  assert.equal(r.status, 200, r.body);
}

/** Opens the SSE output through the gateway once the stream serves it. */
async function subscribe(): Promise<SseConsumer> {
  return waitFor('the stream to serve its SSE output', async () => {
    const c = await openSse(w.gw.port, '/orders/sse');
    if (c.status === 200) return c;
    c.close();
    return undefined;
  });
}

test('a message POSTed through the gateway reaches an SSE consumer; a ConfigMap edit adds a mapping', async () => {
  await applyManifest(w.cp, configMap());
  await applyManifest(w.cp, streamsApi);
  const st = await waitReady(w.cp, { kind: 'svcstreamsapidefinition', ns: 'events', name: 'orders' });
  assert.equal(st.api_id, ID);
  assert.equal(st.listen_path, '/orders/');

  let sse = await subscribe();
  await publish('first');
  await waitFor('the first message', () => sse.events.includes('first'));
  sse.close();

  await applyManifest(w.cp, configMap('root = content().uppercase()'));
  // The edit is served once the stream has been updated on Bento: messages come out transformed.
  await waitFor('the mapping to apply', async () => {
    sse = await subscribe();
    try {
      await publish('second');
      const got = await waitFor('a message', () => sse.events.at(-1), 5_000).catch(() => undefined);
      return got === 'SECOND' ? true : undefined;
    } finally {
      sse.close();
    }
  });

  await w.cp.kubectl(['delete', 'svcstreamsapidefinition', 'orders', '-n', 'events', '--wait=true']);
  await waitFor('the streams API to go from the gateway', async () => {
    const r = await httpRequest(`${w.gw.url}/orders/post`, { method: 'POST', body: 'x' });
    return r.status === 404 ? true : undefined;
  });
});
