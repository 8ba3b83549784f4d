import { test } from 'node:test';
import assert from 'node:assert/strict';
import { asPlainObject, isPlainObject } from './plain-object.ts';

test('a JSON object is a plain object; null, lists and scalars are not', () => {
  for (const v of [{}, { a: 1 }, JSON.parse('{"b":null}') as unknown, Object.create(null) as unknown]) {
    assert.equal(isPlainObject(v), true, JSON.stringify(v));
  }
  for (const v of [null, undefined, [], [{}], 'x', 1, true]) {
    assert.equal(isPlainObject(v), false, JSON.stringify(v));
  }
});

test('asPlainObject gives a JSON object back and undefined for anything else', () => {
  const o = { a: 1 };
  assert.equal(asPlainObject(o), o);
  for (const v of [null, undefined, [], 'x', 1]) assert.equal(asPlainObject(v), undefined, String(v));
});
