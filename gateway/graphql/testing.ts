/**
 * Upstreams for GraphQL tests: a GraphQL server built with graphql-js (HTTP GET and POST, and
 * subscriptions over WebSocket with `graphql-transport-ws`), and JSON upstreams for the data
 * graph (users and their posts). Each records what it was asked, so tests can tell whether a
 * request reached it and how calls overlapped.
 */
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import {
  buildSchema,
  graphql as runGraphql,
  parse,
  subscribe,
  type ExecutionResult,
  type GraphQLSchema,
} from 'graphql';
import WebSocket, { WebSocketServer } from 'ws';
import { keyed, startGateway, type InProcessGateway } from '../testing/harness.ts';
import { closeServer, listenLocal } from '../testing/servers.ts';

/** A test upstream. */
export interface TestUpstream {
  url: string;
  /** Request paths (with query) received, in order. */
  calls: string[];
  /** The most requests in flight at once. */
  maxInFlight: number;
  close(): Promise<void>;
}

/** The schema of the GraphQL upstream (and of the proxyOnly test APIs). */
export const UPSTREAM_SDL = `
type Query {
  hello(name: String): String
  user(id: ID!): User
  users: [User!]!
}
type User { id: ID! name: String email: String friends: [User!]! }
type Subscription { count(to: Int!): Int! userAdded: User! }
`;

const people = [
  { id: '1', name: 'Ada', email: 'ada@example.com' },
  { id: '2', name: 'Brian', email: 'brian@example.com' },
];

const rootValue = {
  hello: ({ name }: { name?: string }) => `hello ${name ?? 'world'}`,
  user: ({ id }: { id: string }) => people.find((p) => p.id === id),
  users: () => people,
  count: async function* ({ to }: { to: number }) {
    for (let i = 1; i <= to; i++) yield await Promise.resolve({ count: i });
  },
  userAdded: async function* () {
    yield await Promise.resolve({ userAdded: { ...people[0], friends: people } });
  },
};

/** `up` as a running upstream: `server` listening on a free port, closed with its connections. */
async function serve<T extends object>(
  up: T,
  server: Server,
): Promise<T & { url: string; close(): Promise<void> }> {
  return Object.assign(up, { url: await listenLocal(server), close: () => closeServer(server) });
}

async function readAll(req: IncomingMessage): Promise<string> {
  let body = '';
  for await (const c of req as AsyncIterable<Buffer>) body += c.toString();
  return body;
}

function track(
  up: { calls: string[]; maxInFlight: number },
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
): (req: IncomingMessage, res: ServerResponse) => void {
  let inFlight = 0;
  return (req, res) => {
    up.calls.push(req.url ?? '');
    inFlight++;
    up.maxInFlight = Math.max(up.maxInFlight, inFlight);
    handle(req, res)
      .catch(() => {
        res.destroy();
      })
      .finally(() => inFlight--);
  };
}

const json = (res: ServerResponse, status: number, body: unknown): void => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

/** A client's message to a GraphQL WebSocket server (either protocol). */
export interface WsMessage {
  type: string;
  id?: string;
  payload?: { query: string; variables?: Record<string, unknown> };
}

/**
 * The message `raw` a GraphQL WebSocket server got on `ws`; a `connection_init` is answered with
 * `connection_ack` here (undefined then: nothing left to do).
 */
export function acknowledged(ws: WebSocket, raw: Buffer): WsMessage | undefined {
  const msg = JSON.parse(raw.toString()) as WsMessage;
  if (msg.type !== 'connection_init') return msg;
  ws.send(JSON.stringify({ type: 'connection_ack' }));
  return undefined;
}

/** The GraphQL upstream: what it was asked over WebSocket too. */
export interface GraphqlUpstream extends TestUpstream {
  /** The operations it was sent over WebSocket (`subscribe`, or the legacy `start`), in order. */
  subscribed: string[];
}

/**
 * A GraphQL server over UPSTREAM_SDL: GET, POST, and subscriptions over WebSocket, with the
 * subprotocol `graphql-transport-ws` or the legacy `graphql-ws` (subscriptions-transport-ws:
 * `start`, `data`, `complete`).
 */
export async function startGraphqlUpstream(): Promise<GraphqlUpstream> {
  const schema = buildSchema(UPSTREAM_SDL);
  const up = { calls: [] as string[], maxInFlight: 0, subscribed: [] as string[] };
  const server = createServer(
    track(up, async (req, res) => {
      const u = new URL(req.url ?? '/', 'http://x');
      let params: { query?: string; variables?: Record<string, unknown>; operationName?: string };
      if (req.method === 'GET') {
        const v = u.searchParams.get('variables');
        const op = u.searchParams.get('operationName');
        params = {
          query: u.searchParams.get('query') ?? '',
          ...(v === null ? {} : { variables: JSON.parse(v) as Record<string, unknown> }),
          ...(op === null ? {} : { operationName: op }),
        };
      } else params = JSON.parse(await readAll(req)) as typeof params;
      const result = await runGraphql({
        schema,
        source: params.query ?? '',
        rootValue,
        variableValues: params.variables,
        operationName: params.operationName,
      });
      json(res, 200, { ...result, path: u.pathname });
    }),
  );
  const wss = new WebSocketServer({
    server,
    handleProtocols: (p) =>
      p.has('graphql-transport-ws') ? 'graphql-transport-ws' : p.has('graphql-ws') ? 'graphql-ws' : false,
  });
  wss.on('connection', (ws) => {
    const legacy = ws.protocol === 'graphql-ws';
    ws.on('message', (raw: Buffer) => {
      const msg = acknowledged(ws, raw);
      if (msg === undefined) return;
      if (msg.type === (legacy ? 'start' : 'subscribe') && msg.payload !== undefined) {
        const id = msg.id;
        up.subscribed.push(msg.payload.query);
        void (async () => {
          const stream = await subscribe({
            schema,
            document: parse(msg.payload?.query ?? ''),
            rootValue,
            variableValues: msg.payload?.variables,
          });
          // The legacy protocol sends `data` and one error; graphql-transport-ws `next` and all.
          if (Symbol.asyncIterator in stream) {
            for await (const r of stream as AsyncIterable<ExecutionResult>)
              ws.send(JSON.stringify({ type: legacy ? 'data' : 'next', id, payload: r }));
          } else
            ws.send(
              JSON.stringify({ type: 'error', id, payload: legacy ? stream.errors?.[0] : stream.errors }),
            );
          ws.send(JSON.stringify({ type: 'complete', id }));
        })();
      }
    });
  });
  const url = await listenLocal(server);
  return Object.assign(up, {
    url,
    close: async () => {
      for (const c of wss.clients) c.terminate();
      wss.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  });
}

/**
 * The answer a WebSocket upgrade to `url` (offering `protocol`, if any) gets instead of being
 * upgraded: its status and body. Rejects when the upgrade succeeds.
 */
export function refusedUpgrade(url: string, protocol?: string): Promise<{ status: number; body: string }> {
  const ws = protocol === undefined ? new WebSocket(url) : new WebSocket(url, protocol);
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, body });
      });
    });
    ws.once('open', () => {
      reject(new Error(`${url}: upgraded`));
    });
    ws.on('error', () => undefined);
  }).finally(() => {
    ws.terminate();
  });
}

/**
 * A JSON upstream: `GET /users/{id}` (404 for an unknown user), `GET /users/{id}/posts`,
 * `/fail` (500), and `/echo/...` (what it was sent: method, path, query, the `x-tag` and `x-global`
 * headers, content type and JSON body). Each answer waits `delayMs`, so concurrent calls overlap.
 */
export async function startJsonUpstream(delayMs = 30): Promise<TestUpstream> {
  const up = { calls: [] as string[], maxInFlight: 0 };
  const posts: Record<string, { id: string; title: string }[]> = {
    '1': [
      { id: 'p1', title: 'Notes' },
      { id: 'p2', title: 'Engines' },
    ],
    '2': [{ id: 'p3', title: 'C' }],
  };
  const server = createServer(
    track(up, async (req, res) => {
      await new Promise((r) => setTimeout(r, delayMs));
      const path = new URL(req.url ?? '/', 'http://x').pathname;
      const m = /^\/users\/([^/]+)(\/posts)?$/.exec(path);
      const user = m === null ? undefined : people.find((p) => p.id === m[1]);
      if (path.startsWith('/echo/')) {
        const body = await readAll(req);
        json(res, 200, {
          method: req.method,
          path,
          query: new URL(req.url ?? '/', 'http://x').search,
          tag: req.headers['x-tag'],
          global: req.headers['x-global'],
          contentType: req.headers['content-type'],
          body: body === '' ? null : (JSON.parse(body) as unknown),
        });
      } else if (path === '/fail') json(res, 500, { message: 'boom' });
      else if (m === null) json(res, 404, { message: 'no route' });
      else if (user === undefined) json(res, 404, { message: `no user ${m[1] ?? ''}` });
      else if (m[2] !== undefined) json(res, 200, { items: posts[user.id] ?? [] });
      else json(res, 200, user);
    }),
  );
  return serve(up, server);
}

/** A users subgraph's SDL (federation): users, and `User` as an entity keyed by `id`. */
export const FED_USERS_SDL = `
type Query { users: [User!]! }
type User @key(fields: "id") { id: ID! name: String! }
`;

/** A reviews subgraph's SDL: reviews, each with its author, an entity of the users subgraph. */
export const FED_REVIEWS_SDL = `
type Query { topReviews: [Review!]! }
type Review { id: ID! body: String! author: User! }
extend type User @key(fields: "id") { id: ID! @external reviews: [Review!]! }
`;

/** The merged schema of the two, which the monolith serves whole. */
export const FED_MERGED_SDL = `
type Query { users: [User!]! topReviews: [Review!]! }
type User { id: ID! name: String! reviews: [Review!]! }
type Review { id: ID! body: String! author: User! }
`;

/** The users of the federation subgraphs. */
export const FED_USERS = [
  { id: 'u1', name: 'Ada' },
  { id: 'u2', name: 'Brian' },
];
/** Their reviews, each with its author's ID. */
export const FED_REVIEWS = [
  { id: 'r1', body: 'Great engine', authorId: 'u1' },
  { id: 'r2', body: 'Fast planner', authorId: 'u2' },
  { id: 'r3', body: 'Good notes', authorId: 'u1' },
];

/** What a subgraph's schema declares for federation, `_Entity` the union of `entities`. */
export const federationDefs = (entities = 'User'): string => `scalar _Any
type _Service { sdl: String }
union _Entity = ${entities}`;

/** `v` as a subgraph answers an object of type `typename`. */
export const typed = <T extends object>(typename: string, v: T): T & { __typename: string } => ({
  __typename: typename,
  ...v,
});

/** A review as the reviews subgraph answers it: its author a `User` entity by ID. */
export const reviewEntity = (r: (typeof FED_REVIEWS)[number]) => ({
  __typename: 'Review',
  id: r.id,
  body: r.body,
  author: { __typename: 'User', id: r.authorId },
});

/** A GraphQL server as a federation subgraph is one, and what it was sent. */
export interface Subgraph extends TestUpstream {
  /** The queries it was sent, in order. */
  queries: string[];
  /** The request headers of each query. */
  headers: IncomingHttpHeaders[];
}

/**
 * A GraphQL server over node:http (POST JSON) on a free port, answering with graphql-js over
 * `schema` (an SDL or a built schema) and `root`: what a federation subgraph serves when its
 * schema has `_entities` and `_service`, written out by hand (no library). With `opts.path` it
 * serves that path alone, as a real server does (`/query`): any other path gets 404.
 */
export async function startSubgraph(
  schema: string | GraphQLSchema,
  root: Record<string, unknown>,
  opts: { path?: string } = {},
): Promise<Subgraph> {
  const built = typeof schema === 'string' ? buildSchema(schema) : schema;
  const up = {
    calls: [] as string[],
    maxInFlight: 0,
    queries: [] as string[],
    headers: [] as IncomingHttpHeaders[],
  };
  const server = createServer(
    track(up, async (req, res) => {
      if (opts.path !== undefined && (req.url ?? '').split('?')[0] !== opts.path) {
        json(res, 404, { error: `no GraphQL endpoint at ${req.url ?? ''}: it is ${opts.path}` });
        return;
      }
      const params = JSON.parse(await readAll(req)) as {
        query?: string;
        variables?: Record<string, unknown>;
      };
      up.queries.push(params.query ?? '');
      up.headers.push(req.headers);
      const result = await runGraphql({
        schema: built,
        source: params.query ?? '',
        rootValue: root,
        variableValues: params.variables,
      });
      json(res, 200, result);
    }),
  );
  return serve(up, server);
}

/** The users of `startUsersAndPosts`'s subgraphs. */
export const FED_POST_USERS = [
  { id: 'u1', name: 'Ada' },
  { id: 'u2', name: 'Brian' },
];
/** Their posts, each with its author's ID. */
export const FED_POSTS = [
  { id: 'p1', title: 'Engines', authorId: 'u1' },
  { id: 'p2', title: 'Planners', authorId: 'u2' },
  { id: 'p3', title: 'Notes', authorId: 'u1' },
];

/**
 * Two federation subgraphs (startSubgraph, `opts.path` as there): the users (`FED_POST_USERS`),
 * and the posts (`FED_POSTS`) extending `User` with each user's posts; each answers `_entities`
 * and gives `sdl` (the SDL its subgraph API declares) as its `_service`.
 */
export async function startUsersAndPosts(
  sdl: { users: string; posts: string },
  opts: { path?: string } = {},
): Promise<{ users: Subgraph; posts: Subgraph }> {
  const users = await startSubgraph(
    `${federationDefs()}
type Query { users: [User!]! _entities(representations: [_Any!]!): [_Entity]! _service: _Service! }
type User { id: ID! name: String! }`,
    {
      users: () => FED_POST_USERS.map((u) => typed('User', u)),
      _entities: ({ representations }: { representations: { id: string }[] }) =>
        representations.map((r) => typed('User', FED_POST_USERS.find((u) => u.id === r.id) ?? {})),
      _service: () => ({ sdl: sdl.users }),
    },
    opts,
  );
  const posts = await startSubgraph(
    `${federationDefs('User | Post')}
type Query { posts: [Post!]! _entities(representations: [_Any!]!): [_Entity]! _service: _Service! }
type Post { id: ID! title: String! }
type User { id: ID! posts: [Post!]! }`,
    {
      posts: () => FED_POSTS.map((p) => typed('Post', p)),
      _entities: ({ representations }: { representations: { id: string }[] }) =>
        representations.map((r) =>
          typed('User', {
            id: r.id,
            posts: FED_POSTS.filter((p) => p.authorId === r.id).map((p) => typed('Post', p)),
          }),
        ),
      _service: () => ({ sdl: sdl.posts }),
    },
    opts,
  );
  return { users, posts };
}

/** A plain GraphQL server of two users (`{ users { id name } }`), at `path` alone. */
export function startPeople(path: string): Promise<Subgraph> {
  return startSubgraph(
    'type Query { users: [User!]! }\ntype User { id: ID! name: String }',
    {
      users: () => [
        { id: '1', name: 'Ada' },
        { id: '2', name: 'Brian' },
      ],
    },
    { path },
  );
}

/**
 * Federation upstreams: a users and a reviews subgraph (each serving `_entities` and `_service`
 * as federation subgraphs do), and a monolith serving the merged schema from the same data, so
 * one query can be answered by the supergraph over the two or by the one upstream.
 */
export async function startFederationUpstreams(): Promise<{
  users: TestUpstream;
  reviews: TestUpstream;
  monolith: TestUpstream;
}> {
  const users = await startSubgraph(
    `${federationDefs()}
type Query { users: [User!]! _entities(representations: [_Any!]!): [_Entity]! _service: _Service! }
type User { id: ID! name: String! }`,
    {
      users: () => FED_USERS.map((u) => typed('User', u)),
      _entities: ({ representations }: { representations: { id: string }[] }) =>
        representations.map((r) => typed('User', FED_USERS.find((u) => u.id === r.id) ?? {})),
      _service: () => ({ sdl: FED_USERS_SDL }),
    },
  );
  const reviews = await startSubgraph(
    `${federationDefs()}
type Query { topReviews: [Review!]! _entities(representations: [_Any!]!): [_Entity]! _service: _Service! }
type Review { id: ID! body: String! author: User! }
type User { id: ID! reviews: [Review!]! }`,
    {
      topReviews: () => FED_REVIEWS.map(reviewEntity),
      _entities: ({ representations }: { representations: { id: string }[] }) =>
        representations.map((r) => ({
          __typename: 'User',
          id: r.id,
          reviews: FED_REVIEWS.filter((x) => x.authorId === r.id).map(reviewEntity),
        })),
      _service: () => ({ sdl: FED_REVIEWS_SDL }),
    },
  );
  const userOf = (id: string) => {
    const u = FED_USERS.find((x) => x.id === id);
    return u === undefined
      ? undefined
      : { ...u, reviews: () => FED_REVIEWS.filter((x) => x.authorId === id).map(monoReview) };
  };
  const monoReview = (r: (typeof FED_REVIEWS)[number]) => ({
    id: r.id,
    body: r.body,
    author: () => userOf(r.authorId),
  });
  const monolith = await startSubgraph(FED_MERGED_SDL, {
    users: () => FED_USERS.map((u) => userOf(u.id)),
    topReviews: () => FED_REVIEWS.map(monoReview),
  });
  return { users, reviews, monolith };
}

/** The `graphql` of a proxyOnly API of UPSTREAM_SDL with its playground at `/playground`. */
export const PLAYGROUND_GRAPHQL = {
  enabled: true,
  execution_mode: 'proxyOnly',
  schema: UPSTREAM_SDL,
  playground: { enabled: true, path: '/playground' },
};

/**
 * A GraphQL upstream (startGraphqlUpstream) and an in-process gateway serving it as the keyed
 * proxyOnly API `pg` at `/pg/`, its playground at `/pg/playground`.
 */
export async function startPlayground(): Promise<{ gql: TestUpstream; gw: InProcessGateway }> {
  const gql = await startGraphqlUpstream();
  const gw = await startGateway();
  await gw.addApi(keyed('pg', '/pg/', gql.url, { graphql: PLAYGROUND_GRAPHQL }));
  await gw.reload();
  return { gql, gw };
}
