import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { IdExtractor } from '../../../schemas/rules/id-extractor.ts';
import { extractIdentity, IdentitySessions, type ExtractorInput } from './id-extractor.ts';

const input = (over: Partial<Omit<ExtractorInput, 'body'>> & { body?: string } = {}): ExtractorInput => ({
  headers: over.headers ?? {},
  query: over.query ?? '',
  body: () => Promise.resolve(Buffer.from(over.body ?? '')),
});

describe('extractIdentity', () => {
  test("a header's first value; none or empty: no identity", async () => {
    const x: IdExtractor = { from: 'header', headerName: 'Authorization', with: 'value' };
    assert.equal(await extractIdentity(x, input({ headers: { authorization: 'abc' } })), 'abc');
    assert.equal(await extractIdentity(x, input()), undefined);
    assert.equal(await extractIdentity(x, input({ headers: { authorization: '' } })), undefined);
  });

  test("a form parameter: the URL-encoded body's values, then the query's, joined (as Go's r.Form)", async () => {
    const x: IdExtractor = { from: 'form', paramName: 'id', with: 'value' };
    const form = { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' };
    assert.equal(await extractIdentity(x, input({ headers: form, body: 'id=a&x=1', query: '?id=b' })), 'ab');
    // Another body type is not a form: the query only.
    assert.equal(
      await extractIdentity(
        x,
        input({ headers: { 'content-type': 'text/plain' }, body: 'id=a', query: 'id=b' }),
      ),
      'b',
    );
    assert.equal(await extractIdentity(x, input({ query: 'other=1' })), undefined);
  });

  test('a regular expression: the match at the index, none past the last', async () => {
    const x: IdExtractor = { from: 'body', with: 'regex', expression: 'u[0-9]+', matchIndex: 1 };
    assert.equal(await extractIdentity(x, input({ body: 'u1 u22 u3' })), 'u22');
    assert.equal(await extractIdentity(x, input({ body: 'u1' })), undefined);
    assert.equal(await extractIdentity({ ...x, matchIndex: 0 }, input({ body: 'u1' })), 'u1');
  });
});

describe('IdentitySessions', () => {
  const session = { rate: 1, per: 1, meta_data: { n: 1 } };

  test('kept until the deadline (Unix seconds), not past it; a deadline not ahead keeps nothing', () => {
    const kept = new IdentitySessions();
    kept.set('a', 'k', session, 100, 50_000);
    assert.deepEqual(kept.get('a', 99_999), { keyId: 'k', session });
    assert.equal(kept.get('a', 100_000), undefined);
    kept.set('b', 'k', session, 0, 50_000);
    assert.equal(kept.get('b', 0), undefined);
    assert.equal(kept.size, 0);
  });

  test('a copy each time: a change to one request session does not reach the next', () => {
    const kept = new IdentitySessions();
    kept.set('a', 'k', session, 100, 0);
    const meta = kept.get('a', 1)?.session.meta_data;
    assert.ok(meta !== undefined);
    meta.n = 2;
    assert.deepEqual(kept.get('a', 1)?.session.meta_data, { n: 1 });
  });

  test('at most its bound: the oldest identity goes first', () => {
    const kept = new IdentitySessions(2);
    kept.set('a', 'ka', session, 100, 0);
    kept.set('b', 'kb', session, 100, 0);
    kept.set('c', 'kc', session, 100, 0);
    assert.equal(kept.size, 2);
    assert.equal(kept.get('a', 1), undefined);
    assert.equal(kept.get('c', 1)?.keyId, 'kc');
  });
});
