/**
 * Subscriptions through a supergraph, end to end: a gateway process (fast path on and off), two
 * subgraph APIs in front of two real GraphQL servers (graphql-js over node:http; the products
 * subgraph also serves `graphql-transport-ws` subscriptions with the `ws` library), and
 * supergraph APIs over them (through the subgraph APIs, `svc://`, and straight to the subgraph's
 * URL). A client subscribing over `graphql-transport-ws` gets each event of the products
 * subgraph with the reviews subgraph's entity fields fetched for it (`_entities`, afresh per
 * event); `complete`, `error` and closing propagate both ways; the key's depth limit applies.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createServer, type Server } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { buildSchema, graphql as runGraphql, parse, subscribe, type ExecutionResult } from 'graphql';
import WebSocket, { WebSocketServer } from 'ws';
import { waitFor } from '../../lib/testing/wait.ts';
import { acknowledged, federationDefs, startSubgraph, type Subgraph } from '../graphql/testing.ts';
import { keyed, keyless, spawnGateway, type GatewayProcess } from '../testing/harness.ts';
import { provision } from '../testing/tables.ts';
import { listenLocal } from '../testing/servers.ts';

const PRODUCTS_SDL = `
type Query { topProducts: [Product!]! }
type Subscription { priceChanged: Product! ticks(to: Int!): Int! refused: Int! }
type Product @key(fields: "upc") { upc: String! name: String! price: Int! }
`;

const REVIEWS_SDL = `
type Query { reviewCount: Int! }
type Review { body: String! }
extend type Product @key(fields: "upc") { upc: String! @external reviews: [Review!]! }
`;

const MERGED_SDL = `
type Query { topProducts: [Product!]! reviewCount: Int! }
type Subscription { priceChanged: Product! ticks(to: Int!): Int! refused: Int! }
type Product { upc: String! name: String! price: Int! reviews: [Review!]! }
type Review { body: String! }
`;

/** Reviews by product, changed by tests between events. */
const REVIEWS: Record<string, string[]> = { p1: ['Sturdy'], p2: [] };

/** A queue of values an async iterator reads, for a subscription the test feeds. */
class Feed {
  readonly #values: unknown[] = [];
  #wake: (() => void) | undefined;
  #ended = false;
  push(v: unknown): void {
    this.#values.push(v);
    this.#wake?.();
  }
  end(): void {
    this.#ended = true;
    this.#wake?.();
  }
  async *[Symbol.asyncIterator](): AsyncGenerator {
    for (;;) {
      const v = this.#values.shift();
      if (v !== undefined) yield v;
      else if (this.#ended) return;
      else await new Promise<void>((r) => (this.#wake = r));
    }
  }
}

/** The products subgraph: queries over POST, subscriptions over graphql-transport-ws. */
interface ProductsSubgraph {
  url: string;
  /** The subscription queries it was sent, in order. */
  subscribed: string[];
  /** `complete` messages it got from the gateway. */
  completes: number;
  /** Its sockets the gateway closed, and those open now. */
  closed: number;
  open: () => number;
  /** The feed of the current `priceChanged` subscriptions. */
  feeds: Feed[];
  /** Cuts every subscription socket, as a subgraph going down does. */
  drop(): void;
  close(): Promise<void>;
}

async function startProductsSubgraph(): Promise<ProductsSubgraph> {
  const schema = buildSchema(`${federationDefs('Product')}
type Query { topProducts: [Product!]! _entities(representations: [_Any!]!): [_Entity]! _service: _Service! }
type Subscription { priceChanged: Product! ticks(to: Int!): Int! refused: Int! }
type Product { upc: String! name: String! price: Int! }`);
  const products = [
    { __typename: 'Product', upc: 'p1', name: 'Lamp', price: 10 },
    { __typename: 'Product', upc: 'p2', name: 'Desk', price: 90 },
  ];
  const state: ProductsSubgraph = {
    url: '',
    subscribed: [],
    completes: 0,
    closed: 0,
    open: () => wss.clients.size,
    feeds: [],
    drop: () => {
      for (const c of wss.clients) c.terminate();
    },
    close: async () => {
      for (const c of wss.clients) c.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
  const root = {
    topProducts: () => products,
    _entities: ({ representations }: { representations: { upc: string }[] }) =>
      representations.map((r) => products.find((p) => p.upc === r.upc)),
    _service: () => ({ sdl: PRODUCTS_SDL }),
    priceChanged: () => {
      const feed = new Feed();
      state.feeds.push(feed);
      return (async function* () {
        for await (const p of feed) yield { priceChanged: p };
      })();
    },
    ticks: async function* ({ to }: { to: number }) {
      for (let i = 1; i <= to; i++) yield await Promise.resolve({ ticks: i });
    },
    refused: () => {
      throw new Error('no refunds');
    },
  };
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const params = JSON.parse(body) as { query: string; variables?: Record<string, unknown> };
      void runGraphql({
        schema,
        source: params.query,
        rootValue: root,
        variableValues: params.variables,
      }).then((r) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(r));
      });
    });
  });
  const wss = new WebSocketServer({
    server,
    handleProtocols: (p) => (p.has('graphql-transport-ws') ? 'graphql-transport-ws' : false),
  });
  wss.on('connection', (ws) => {
    const running = new Map<string, AsyncGenerator<ExecutionResult>>();
    ws.on('close', () => {
      state.closed++;
      for (const it of running.values()) void it.return(undefined);
    });
    ws.on('message', (raw: Buffer) => {
      const msg = acknowledged(ws, raw);
      if (msg === undefined) return;
      if (msg.type === 'complete' && msg.id !== undefined) {
        state.completes++;
        void running.get(msg.id)?.return(undefined);
        running.delete(msg.id);
      } else if (msg.type === 'subscribe' && msg.payload !== undefined && msg.id !== undefined) {
        const id = msg.id;
        state.subscribed.push(msg.payload.query);
        void (async () => {
          const stream = await subscribe({
            schema,
            document: parse(msg.payload?.query ?? ''),
            rootValue: root,
            variableValues: msg.payload?.variables,
          });
          if (!(Symbol.asyncIterator in stream)) {
            ws.send(JSON.stringify({ type: 'error', id, payload: stream.errors }));
            return;
          }
          const it = stream;
          running.set(id, it);
          for await (const r of it) ws.send(JSON.stringify({ type: 'next', id, payload: r }));
          if (running.delete(id)) ws.send(JSON.stringify({ type: 'complete', id }));
        })();
      }
    });
  });
  state.url = await listenLocal(server);
  return state;
}

/** A graphql-transport-ws client of the gateway: every message it got, in order. */
interface Client {
  ws: WebSocket;
  messages: Record<string, unknown>[];
  send(m: Record<string, unknown>): void;
  /** Resolves with the first message of `type` (for `id` when given) from the `from`th on. */
  next(type: string, from?: number): Promise<Record<string, unknown>>;
  closed: Promise<number>;
}

async function openClient(port: number, path: string, headers: Record<string, string> = {}): Promise<Client> {
  const ws = new WebSocket(`ws://127.0.0.1:${String(port)}${path}`, 'graphql-transport-ws', { headers });
  const messages: Record<string, unknown>[] = [];
  ws.on('message', (d: Buffer) => messages.push(JSON.parse(d.toString()) as Record<string, unknown>));
  const closed = new Promise<number>((resolve) => {
    ws.once('close', (code) => {
      resolve(code);
    });
  });
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => {
      resolve();
    });
    ws.once('error', reject);
  });
  const c: Client = {
    ws,
    messages,
    send: (m) => {
      ws.send(JSON.stringify(m));
    },
    next: (type, from = 0) =>
      waitFor(`a ${type} message`, () => messages.slice(from).find((m) => m.type === type), 10_000, 10),
    closed,
  };
  c.send({ type: 'connection_init' });
  await c.next('connection_ack');
  return c;
}

for (const fast of [true, false])
  describe(`subscriptions through a supergraph (gateway process, fast path ${fast ? 'on' : 'off'})`, () => {
    let gw: GatewayProcess;
    let products: ProductsSubgraph;
    let reviews: Subgraph;
    let dataDir = '';

    const supergraph = (
      productsUrl: string,
      reviewsUrl: string,
      /** null: composed from the subgraphs' SDLs. */
      schema: string | null = MERGED_SDL,
    ) => ({
      enabled: true,
      execution_mode: 'supergraph',
      ...(schema === null ? {} : { schema }),
      supergraph: {
        subgraphs: [
          {
            name: 'products',
            url: productsUrl,
            sdl: PRODUCTS_SDL,
            subscription_type: 'graphql-transport-ws',
          },
          { name: 'reviews', url: reviewsUrl, sdl: REVIEWS_SDL },
        ],
      },
    });

    before(async () => {
      products = await startProductsSubgraph();
      reviews = await startSubgraph(
        buildSchema(`${federationDefs('Product')}
type Query { reviewCount: Int! _entities(representations: [_Any!]!): [_Entity]! _service: _Service! }
type Review { body: String! }
type Product { upc: String! reviews: [Review!]! }`),
        {
          reviewCount: () => Object.values(REVIEWS).flat().length,
          _entities: ({ representations }: { representations: { upc: string }[] }) =>
            representations.map((r) => ({
              __typename: 'Product',
              upc: r.upc,
              reviews: (REVIEWS[r.upc] ?? []).map((body) => ({ body })),
            })),
          _service: () => ({ sdl: REVIEWS_SDL }),
        },
      );
      dataDir = mkdtempSync(join(tmpdir(), 'svc-gw-fed-subs-'));
      gw = await spawnGateway(['--data-dir', dataDir, ...(fast ? [] : ['--fast-path=false'])]);
      const apis = [
        keyless('products-sub', '/products-sub/', products.url, {
          graphql: { enabled: true, execution_mode: 'subgraph', subgraph: { sdl: PRODUCTS_SDL } },
        }),
        keyless('reviews-sub', '/reviews-sub/', reviews.url, {
          graphql: { enabled: true, execution_mode: 'subgraph', subgraph: { sdl: REVIEWS_SDL } },
        }),
        // Through the subgraph APIs' chains.
        keyless('shop', '/shop/', '', {
          graphql: supergraph('svc://products-sub/graphql', 'svc://reviews-sub/graphql'),
        }),
        // Straight to the subgraphs' URLs, its schema composed from theirs.
        keyless('shop-direct', '/shop-direct/', '', {
          graphql: supergraph(`${products.url}/graphql`, `${reviews.url}/graphql`, null),
        }),
        keyed('shop-keyed', '/shop-keyed/', '', {
          graphql: supergraph('svc://products-sub/graphql', 'svc://reviews-sub/graphql'),
        }),
        // A subgraph API behind a key: its subscriptions are relayed to the subgraph's server.
        keyed('products-keyed', '/products-keyed/', products.url, {
          graphql: { enabled: true, execution_mode: 'subgraph', subgraph: { sdl: PRODUCTS_SDL } },
        }),
      ];
      await provision(gw, apis);
      const key = await gw.admin('POST', '/svc/keys/shallow', {
        org_id: '',
        max_query_depth: 2,
        access_rights: { 'shop-keyed': { api_id: 'shop-keyed', versions: ['Default'] } },
      });
      assert.equal(key.status, 200, key.text);
      const right = (api: string, restricted: boolean) => ({
        [api]: {
          api_id: api,
          versions: ['Default'],
          ...(restricted ? { restricted_types: [{ name: 'Product', fields: ['name'] }] } : {}),
        },
      });
      for (const [id, body] of [
        ['sub-shallow', { max_query_depth: 1, access_rights: right('products-keyed', false) }],
        ['sub-restricted', { access_rights: right('products-keyed', true) }],
        ['shop-restricted', { access_rights: right('shop-keyed', true) }],
      ] as const) {
        const res = await gw.admin('POST', `/svc/keys/${id}`, { org_id: '', ...body });
        assert.equal(res.status, 200, res.text);
      }
    });

    after(async () => {
      await gw.stop();
      await Promise.all([products.close(), reviews.close()]);
      rmSync(dataDir, { recursive: true, force: true });
    });

    for (const [what, path] of [
      ['through the subgraph APIs (svc://)', '/shop/'],
      ["straight to the subgraphs' URLs, composed", '/shop-direct/'],
    ] as const)
      test(`${what}: each event with the other subgraph's entity fields, fetched afresh; the subgraph's complete ends it`, async () => {
        REVIEWS.p1 = ['Sturdy'];
        const feeds = products.feeds.length;
        const subscribed = products.subscribed.length;
        const entityCalls = reviews.queries.length;
        const c = await openClient(gw.port, path);
        c.send({
          id: 'a',
          type: 'subscribe',
          payload: { query: 'subscription { changed: priceChanged { upc price reviews { body } } }' },
        });
        await waitFor('the subgraph subscription', () => products.feeds.length > feeds, 10_000, 10);
        // The subgraph is asked its part only: the key for the reviews, never their field.
        assert.equal(products.subscribed.length, subscribed + 1);
        assert.doesNotMatch(products.subscribed.at(-1) ?? '', /reviews/);
        assert.match(products.subscribed.at(-1) ?? '', /^subscription \{/);
        const feed = products.feeds.at(-1);
        feed?.push({ __typename: 'Product', upc: 'p1', name: 'Lamp', price: 11 });
        const first = await c.next('next');
        assert.deepEqual(first, {
          id: 'a',
          type: 'next',
          payload: { data: { changed: { upc: 'p1', price: 11, reviews: [{ body: 'Sturdy' }] } } },
        });
        REVIEWS.p1 = ['Sturdy', 'Bright'];
        feed?.push({ __typename: 'Product', upc: 'p1', name: 'Lamp', price: 12 });
        await waitFor(
          'two events',
          () => c.messages.filter((m) => m.type === 'next').length === 2,
          10_000,
          10,
        );
        assert.deepEqual(c.messages.filter((m) => m.type === 'next')[1], {
          id: 'a',
          type: 'next',
          payload: {
            data: { changed: { upc: 'p1', price: 12, reviews: [{ body: 'Sturdy' }, { body: 'Bright' }] } },
          },
        });
        // One _entities call to the reviews subgraph per event.
        const calls = reviews.queries.slice(entityCalls);
        assert.equal(calls.length, 2);
        for (const q of calls) assert.match(q, /_entities/);
        feed?.end();
        assert.deepEqual(await c.next('complete'), { id: 'a', type: 'complete' });
        c.ws.close();
        await c.closed;
      });

    test('a subscription without entity fields: the events as the subgraph sends them, then complete', async () => {
      const c = await openClient(gw.port, '/shop/');
      c.send({
        id: 't',
        type: 'subscribe',
        payload: { query: 'subscription($n: Int!) { ticks(to: $n) }', variables: { n: 3 } },
      });
      await c.next('complete');
      assert.deepEqual(c.messages.slice(1), [
        { id: 't', type: 'next', payload: { data: { ticks: 1 } } },
        { id: 't', type: 'next', payload: { data: { ticks: 2 } } },
        { id: 't', type: 'next', payload: { data: { ticks: 3 } } },
        { id: 't', type: 'complete' },
      ]);
      // Queries over the same socket are planned as over HTTP.
      c.send({ id: 'q', type: 'subscribe', payload: { query: '{ topProducts { upc reviews { body } } }' } });
      await waitFor(
        'the query answer',
        () => c.messages.find((m) => m.id === 'q' && m.type === 'complete'),
        10_000,
        10,
      );
      const answer = c.messages.find((m) => m.id === 'q' && m.type === 'next');
      assert.deepEqual((answer?.payload as { data: unknown }).data, {
        topProducts: [
          { upc: 'p1', reviews: REVIEWS.p1?.map((body) => ({ body })) },
          { upc: 'p2', reviews: [] },
        ],
      });
      c.ws.close();
      await c.closed;
    });

    test("the client's complete completes the subgraph's operation and closes its socket", async () => {
      const feeds = products.feeds.length;
      const [completes, closed] = [products.completes, products.closed];
      const c = await openClient(gw.port, '/shop/');
      c.send({ id: 'a', type: 'subscribe', payload: { query: 'subscription { priceChanged { upc } }' } });
      await waitFor('the subgraph subscription', () => products.feeds.length > feeds, 10_000, 10);
      c.send({ id: 'a', type: 'complete' });
      await waitFor('the subgraph to get complete', () => products.completes > completes, 10_000, 10);
      await waitFor('the subgraph socket to close', () => products.closed > closed, 10_000, 10);
      // The client's socket stays: another subscription runs on it.
      c.send({ id: 'b', type: 'subscribe', payload: { query: 'subscription { ticks(to: 1) }' } });
      await waitFor(
        'b to complete',
        () => c.messages.find((m) => m.id === 'b' && m.type === 'complete'),
        10_000,
        10,
      );
      assert.equal(c.messages.filter((m) => m.id === 'a').length, 0);
      c.ws.close();
      await c.closed;
    });

    test("the client leaving closes the subgraph's socket", async () => {
      const feeds = products.feeds.length;
      const closed = products.closed;
      const c = await openClient(gw.port, '/shop/');
      c.send({ id: 'a', type: 'subscribe', payload: { query: 'subscription { priceChanged { upc } }' } });
      await waitFor('the subgraph subscription', () => products.feeds.length > feeds, 10_000, 10);
      c.ws.terminate();
      await waitFor('the subgraph socket to close', () => products.closed > closed, 10_000, 10);
    });

    test("the subgraph's error is the client's error, naming the subgraph", async () => {
      const c = await openClient(gw.port, '/shop/');
      c.send({ id: 'r', type: 'subscribe', payload: { query: 'subscription { refused }' } });
      assert.deepEqual(await c.next('error'), {
        id: 'r',
        type: 'error',
        payload: [{ message: 'subgraph products: no refunds' }],
      });
      c.ws.close();
      await c.closed;
    });

    test("an event with the subgraph's errors: a next with them, naming the subgraph; the subscription goes on", async () => {
      const feeds = products.feeds.length;
      const c = await openClient(gw.port, '/shop/');
      c.send({
        id: 'e',
        type: 'subscribe',
        payload: { query: 'subscription { priceChanged { upc price } }' },
      });
      await waitFor('the subgraph subscription', () => products.feeds.length > feeds, 10_000, 10);
      const feed = products.feeds.at(-1);
      feed?.push({ __typename: 'Product', upc: 'p2', name: 'Desk', price: null });
      const bad = await c.next('next');
      const errors = (bad.payload as { data: unknown; errors: { message: string }[] }).errors;
      assert.equal((bad.payload as { data: unknown }).data, null);
      assert.equal(
        errors[0]?.message,
        'subgraph products: Cannot return null for non-nullable field Product.price.',
      );
      feed?.push({ __typename: 'Product', upc: 'p2', name: 'Desk', price: 95 });
      await waitFor(
        'the next event',
        () => c.messages.filter((m) => m.type === 'next').length === 2,
        10_000,
        10,
      );
      assert.deepEqual(c.messages.filter((m) => m.type === 'next')[1]?.payload, {
        data: { priceChanged: { upc: 'p2', price: 95 } },
      });
      c.ws.close();
      await c.closed;
    });

    test('the subgraph going away ends the subscription with an error naming it', async () => {
      const feeds = products.feeds.length;
      const c = await openClient(gw.port, '/shop/');
      c.send({ id: 'a', type: 'subscribe', payload: { query: 'subscription { priceChanged { upc } }' } });
      await waitFor('the subgraph subscription', () => products.feeds.length > feeds, 10_000, 10);
      products.drop();
      const err = await c.next('error');
      assert.equal(err.id, 'a');
      assert.match(
        (err.payload as { message: string }[])[0]?.message ?? '',
        /^subgraph products: closed the subscription socket \(1006\)/,
      );
      c.ws.close();
      await c.closed;
    });

    test("the key's depth limit applies before the subgraph is asked; a subscription over HTTP is refused", async () => {
      const subscribed = products.subscribed.length;
      const c = await openClient(gw.port, '/shop-keyed/', { authorization: 'shallow' });
      c.send({
        id: 'deep',
        type: 'subscribe',
        payload: { query: 'subscription { priceChanged { reviews { body } } }' },
      });
      assert.deepEqual(await c.next('error'), {
        id: 'deep',
        type: 'error',
        payload: [{ message: 'depth limit exceeded' }],
      });
      assert.equal(products.subscribed.length, subscribed);
      c.send({ id: 'ok', type: 'subscribe', payload: { query: 'subscription { ticks(to: 1) }' } });
      await waitFor(
        'ok to complete',
        () => c.messages.find((m) => m.id === 'ok' && m.type === 'complete'),
        10_000,
        10,
      );
      assert.deepEqual(c.messages.find((m) => m.id === 'ok' && m.type === 'next')?.payload, {
        data: { ticks: 1 },
      });
      c.ws.close();
      await c.closed;
      // Without the key: refused by authentication before any WebSocket is served.
      await assert.rejects(openClient(gw.port, '/shop-keyed/'), /Unexpected server response: 401/);
      const http = await gw.request({
        method: 'POST',
        path: '/shop/',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: 'subscription { ticks(to: 1) }' }),
      });
      assert.equal(http.status, 400, http.text);
    });

    /** Subscribes `query` as `id`, and waits for its `error` or `complete`: its messages. */
    const run = async (c: Client, id: string, query: string): Promise<Record<string, unknown>[]> => {
      c.send({ id, type: 'subscribe', payload: { query } });
      await waitFor(
        `the end of ${id}`,
        () => c.messages.find((m) => m.id === id && (m.type === 'error' || m.type === 'complete')),
        10_000,
        10,
      );
      return c.messages.filter((m) => m.id === id);
    };
    const restrictedName = [
      { message: 'field: name is restricted on type: Product', locations: [{ line: 1, column: 31 }] },
    ];
    const nope = [
      { message: 'Cannot query field "nope" on type "Subscription".', locations: [{ line: 1, column: 16 }] },
    ];

    test("a subgraph API's relayed subscription: the key's depth limit, field permissions and validity are checked before the subgraph is asked", async () => {
      const subscribed = products.subscribed.length;
      const shallow = await openClient(gw.port, '/products-keyed/', { authorization: 'sub-shallow' });
      assert.deepEqual(await run(shallow, 'deep', 'subscription { priceChanged { upc } }'), [
        { id: 'deep', type: 'error', payload: [{ message: 'depth limit exceeded' }] },
      ]);
      const restricted = await openClient(gw.port, '/products-keyed/', { authorization: 'sub-restricted' });
      assert.deepEqual(await run(restricted, 'name', 'subscription { priceChanged { name } }'), [
        { id: 'name', type: 'error', payload: restrictedName },
      ]);
      assert.deepEqual(await run(restricted, 'nope', 'subscription { nope }'), [
        { id: 'nope', type: 'error', payload: nope },
      ]);
      assert.deepEqual(products.subscribed.slice(subscribed), [], 'the subgraph was asked');
      // What the key may run is relayed, on the same socket.
      assert.deepEqual(await run(shallow, 'ok', 'subscription { ticks(to: 1) }'), [
        { id: 'ok', type: 'next', payload: { data: { ticks: 1 } } },
        { id: 'ok', type: 'complete' },
      ]);
      assert.deepEqual(products.subscribed.slice(subscribed), ['subscription { ticks(to: 1) }']);
      for (const c of [shallow, restricted]) {
        c.ws.close();
        await c.closed;
      }
    });

    test("a supergraph's subscription: the key's field permissions and validity are checked before a subgraph is asked", async () => {
      const subscribed = products.subscribed.length;
      const c = await openClient(gw.port, '/shop-keyed/', { authorization: 'shop-restricted' });
      assert.deepEqual(await run(c, 'name', 'subscription { priceChanged { name } }'), [
        { id: 'name', type: 'error', payload: restrictedName },
      ]);
      assert.deepEqual(await run(c, 'nope', 'subscription { nope }'), [
        { id: 'nope', type: 'error', payload: nope },
      ]);
      assert.equal(products.subscribed.length, subscribed);
      c.ws.close();
      await c.closed;
    });
  });
