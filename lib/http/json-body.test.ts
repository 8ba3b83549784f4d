import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { readJsonObject, withoutNulls, type BodyProblem } from './json-body.ts';

/** A listener answering what readJsonObject made of the body: 200 and the object, or 4xx and the problem. */
async function withServer(maxBytes: number, run: (url: string) => Promise<void>): Promise<void> {
  class Refused extends Error {
    readonly problem: BodyProblem;
    constructor(problem: BodyProblem) {
      super(problem.kind);
      this.problem = problem;
    }
  }
  const server = http.createServer((req, res) => {
    readJsonObject(req, maxBytes, (p) => new Refused(p)).then(
      (value) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(value)),
      (err: unknown) => {
        const problem = err instanceof Refused ? err.problem : { kind: String(err) };
        res.writeHead(problem.kind === 'too-large' ? 413 : 400).end(JSON.stringify(problem));
        if (problem.kind === 'too-large') req.resume();
      },
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    await run(`http://127.0.0.1:${String((server.address() as AddressInfo).port)}/`);
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

test('a JSON object body is read; anything else is refused with its problem', async () => {
  await withServer(200, async (url) => {
    const post = async (body: string) => {
      const res = await fetch(url, { method: 'POST', body });
      return { status: res.status, body: await res.json() };
    };
    assert.deepEqual(await post('{"a":1,"b":[null]}'), { status: 200, body: { a: 1, b: [null] } });
    for (const body of ['', 'nope', '[]', 'null', '"x"', '1']) {
      assert.deepEqual(await post(body), { status: 400, body: { kind: 'not-an-object' } }, body);
    }
    assert.deepEqual((await post(`{"a":"${'x'.repeat(300)}"}`)).status, 413);
    const deep = await post(`{"x":${'['.repeat(60)}${']'.repeat(60)}}`);
    assert.deepEqual(deep.status, 200, 'under the size limit and 61 levels deep');
  });
  await withServer(4096, async (url) => {
    const res = await fetch(url, { method: 'POST', body: `{"x":${'['.repeat(200)}${']'.repeat(200)}}` });
    assert.equal(res.status, 400);
    const problem = (await res.json()) as { kind: string; message: string };
    assert.equal(problem.kind, 'too-deep');
    assert.match(problem.message, /the body.*x.*128/);
  });
});

test('withoutNulls drops null properties at any depth and keeps nulls in lists', () => {
  assert.deepEqual(withoutNulls({ a: null, b: { c: null, d: 1 }, e: [null, { f: null }] }), {
    b: { d: 1 },
    e: [null, {}],
  });
});
