/** Path templates: IDs in a path become `{id}`, so endpoints stay few whatever clients send. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pathTemplate } from './records.ts';

const cases: [name: string, path: string, template: string][] = [
  ['plain path kept', '/users/list', '/users/list'],
  ['number', '/users/12345', '/users/{id}'],
  ['uuid', '/orders/3f2b8c1e-9d4a-4c6b-8e2f-1a2b3c4d5e6f/items', '/orders/{id}/items'],
  ['long hex', '/blobs/deadbeefdeadbeef01', '/blobs/{id}'],
  ['mixed letters and digits', '/tokens/ab12cd34ef56gh', '/tokens/{id}'],
  ['short word with a digit kept', '/v2/users', '/v2/users'],
  ['root', '/', '/'],
  ['deep paths folded', '/a/b/c/d/e/f/g/h/i/j/k', '/a/b/c/d/e/f/g/h/{...}'],
  ['long segment', `/x/${'z'.repeat(80)}`, '/x/{long}'],
];

for (const [name, path, template] of cases) {
  test(`pathTemplate: ${name}`, () => {
    assert.equal(pathTemplate(path), template);
  });
}
