/**
 * Upstreams for GraphQL tests: a GraphQL server built with graphql-js (HTTP GET and POST, and
 * subscriptions over WebSocket with `graphql-transport-ws`), and JSON upstreams for the data
 * graph (users and their posts). Each records what it was asked, so tests can tell whether a
 * request reached it and how calls overlapped.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { buildSchema, graphql as runGraphql, parse, subscribe, type ExecutionResult } from 'graphql';
import { WebSocketServer } from 'ws';

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
type Subscription { count(to: Int!): Int! }
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
};

function listen(server: Server): Promise<string> {
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    });
  });
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

/** A GraphQL server over UPSTREAM_SDL: GET, POST, and `graphql-transport-ws` subscriptions. */
export async function startGraphqlUpstream(): Promise<TestUpstream> {
  const schema = buildSchema(UPSTREAM_SDL);
  const up = { calls: [] as string[], maxInFlight: 0 };
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
    handleProtocols: (p) => (p.has('graphql-transport-ws') ? 'graphql-transport-ws' : false),
  });
  wss.on('connection', (ws) => {
    ws.on('message', (raw: Buffer) => {
      const msg = JSON.parse(raw.toString()) as {
        type: string;
        id?: string;
        payload?: { query: string; variables?: Record<string, unknown> };
      };
      if (msg.type === 'connection_init') ws.send(JSON.stringify({ type: 'connection_ack' }));
      else if (msg.type === 'subscribe' && msg.payload !== undefined) {
        const id = msg.id;
        void (async () => {
          const stream = await subscribe({
            schema,
            document: parse(msg.payload?.query ?? ''),
            rootValue,
            variableValues: msg.payload?.variables,
          });
          if (Symbol.asyncIterator in stream) {
            for await (const r of stream as AsyncIterable<ExecutionResult>)
              ws.send(JSON.stringify({ type: 'next', id, payload: r }));
          } else ws.send(JSON.stringify({ type: 'error', id, payload: stream.errors }));
          ws.send(JSON.stringify({ type: 'complete', id }));
        })();
      }
    });
  });
  const url = await listen(server);
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
  const url = await listen(server);
  return Object.assign(up, {
    url,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  });
}
