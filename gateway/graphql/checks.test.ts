/**
 * The checks' cache of parsed and validated documents (checks.ts, document-cache.ts): bounded in
 * entries and characters, least recently used first out, one schema's answer never given for
 * another (a rebuilt schema, as a reload makes, included), and its answers those of graphql-js.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildSchema, type GraphQLError } from 'graphql';
import { documentCache, introspectionErrors, parseAndValidate, validateDocument } from './checks.ts';
import { BoundedLru } from './document-cache.ts';

const SDL =
  'type Query { hello(name: String): String user(id: ID!): User } type User { id: ID! name: String }';
/** The same API reloaded without `hello`. */
const SDL_WITHOUT_HELLO = 'type Query { user(id: ID!): User } type User { id: ID! name: String }';

const messages = (r: ReturnType<typeof parseAndValidate>): string[] =>
  'document' in r ? [] : r.map((e: GraphQLError) => e.message);

test('BoundedLru: at most maxEntries, the least recently used out first', () => {
  const lru = new BoundedLru<number>(3, 1000, 100);
  lru.set('a', 1);
  lru.set('b', 2);
  lru.set('c', 3);
  assert.equal(lru.get('a'), 1); // a is now the most recent: b goes next
  lru.set('d', 4);
  assert.equal(lru.size, 3);
  assert.equal(lru.get('b'), undefined);
  assert.deepEqual(
    ['a', 'c', 'd'].map((k) => lru.get(k)),
    [1, 3, 4],
  );
});

test('BoundedLru: at most maxChars of keys; a key over maxKeyChars is not stored', () => {
  const lru = new BoundedLru<number>(100, 10, 6);
  assert.equal(lru.set('aaaa', 1), true);
  assert.equal(lru.set('bbbb', 2), true);
  assert.equal(lru.chars, 8);
  assert.equal(lru.set('cccc', 3), true); // 12 characters: aaaa goes
  assert.equal(lru.chars, 8);
  assert.equal(lru.get('aaaa'), undefined);
  assert.equal(lru.get('cccc'), 3);
  assert.equal(lru.set('toolong', 4), false);
  assert.equal(lru.get('toolong'), undefined);
  assert.equal(lru.size, 2);
  // Storing a key again replaces it, counted once.
  lru.set('cccc', 5);
  assert.equal(lru.chars, 8);
  assert.equal(lru.get('cccc'), 5);
});

test('parseAndValidate: the same text for the same schema is parsed and validated once', () => {
  documentCache.clear();
  const schema = buildSchema(SDL);
  const first = parseAndValidate(schema, '{ hello }', undefined);
  const second = parseAndValidate(schema, '{ hello }', undefined);
  assert.ok('document' in first && 'document' in second);
  assert.equal(second.document, first.document, 'the cached document');
  assert.equal(documentCache.size, 1);
  // Shared by every request sending it: nobody may change it.
  assert.ok(Object.isFrozen(first.document));
  assert.ok(Object.isFrozen(first.operation.selectionSet.selections[0]));
  assert.throws(() => {
    (first.document.definitions as unknown[]).push({});
  }, TypeError);
});

test('parseAndValidate: a query valid for one schema is still refused by another (a reload without the field)', () => {
  documentCache.clear();
  const before = buildSchema(SDL);
  const reloaded = buildSchema(SDL_WITHOUT_HELLO);
  assert.deepEqual(messages(parseAndValidate(before, '{ hello }', undefined)), []);
  assert.deepEqual(messages(parseAndValidate(reloaded, '{ hello }', undefined)), [
    'Cannot query field "hello" on type "Query".',
  ]);
  // The same SDL built again (a reload that leaves it as it was) is another schema: checked afresh.
  assert.deepEqual(messages(parseAndValidate(buildSchema(SDL), '{ hello }', undefined)), []);
  // And the other way: refused first, then valid for the schema that has the field.
  assert.deepEqual(messages(parseAndValidate(reloaded, '{ hello(name: "x") }', undefined)), [
    'Cannot query field "hello" on type "Query".',
  ]);
  assert.deepEqual(messages(parseAndValidate(before, '{ hello(name: "x") }', undefined)), []);
  assert.deepEqual(messages(parseAndValidate(reloaded, '{ hello(name: "x") }', undefined)), [
    'Cannot query field "hello" on type "Query".',
  ]);
});

test('parseAndValidate: an invalid query gets the same errors each time, with their locations', () => {
  documentCache.clear();
  const schema = buildSchema(SDL);
  for (let i = 0; i < 3; i++) {
    const r = parseAndValidate(schema, '{\n  nope }', undefined);
    assert.ok(!('document' in r));
    assert.deepEqual(
      r.map((e) => e.toJSON()),
      [{ message: 'Cannot query field "nope" on type "Query".', locations: [{ line: 2, column: 3 }] }],
    );
    assert.deepEqual(messages(parseAndValidate(schema, '{ hello ', undefined)), [
      'Syntax Error: Expected Name, found <EOF>.',
    ]);
  }
});

test('parseAndValidate: the operation is chosen per request on a cached document', () => {
  documentCache.clear();
  const schema = buildSchema(SDL);
  const text = 'query A { hello } query B { user(id: "1") { id } }';
  const a = parseAndValidate(schema, text, 'A');
  const b = parseAndValidate(schema, text, 'B');
  assert.ok('document' in a && 'document' in b);
  assert.equal(a.document, b.document);
  assert.equal(a.operation.name?.value, 'A');
  assert.equal(b.operation.name?.value, 'B');
  assert.deepEqual(messages(parseAndValidate(schema, text, 'C')), ['Unknown operation named "C".']);
  assert.deepEqual(messages(parseAndValidate(schema, text, undefined)), [
    'Must provide operation name if query contains multiple operations.',
  ]);
});

test('parseAndValidate: the cache stays within its bounds; a long query is checked each time', () => {
  documentCache.clear();
  const schema = buildSchema(SDL);
  for (let i = 0; i < documentCache.maxEntries + 100; i++) {
    assert.deepEqual(messages(parseAndValidate(schema, `{ a${String(i)}: hello }`, undefined)), []);
  }
  assert.equal(documentCache.size, documentCache.maxEntries);
  documentCache.clear();
  const long = `{ ${Array.from({ length: 2000 }, (_, i) => `f${String(i)}: hello`).join(' ')} }`;
  assert.ok(long.length > documentCache.maxKeyChars);
  const first = parseAndValidate(schema, long, undefined);
  const second = parseAndValidate(schema, long, undefined);
  assert.ok('document' in first && 'document' in second);
  assert.notEqual(second.document, first.document, 'not cached');
  assert.deepEqual([documentCache.size], [0], 'nothing cached');
  // Text alone fills it to its characters' bound at most.
  const big = (i: number): string => `{ a${String(i)}: hello ${' '.repeat(10_000)}}`;
  for (let i = 0; i < 40; i++) parseAndValidate(schema, big(i), undefined);
  assert.ok(documentCache.chars <= documentCache.maxChars);
  assert.ok(documentCache.size < 40);
});

test('validateDocument and introspectionErrors: the answers of graphql-js, cached or not', () => {
  documentCache.clear();
  const schema = buildSchema(SDL);
  const q = '{ __schema { queryType { name } } hello }';
  const direct = validateDocument(schema, q);
  assert.ok('document' in direct);
  const checked = parseAndValidate(schema, q, undefined);
  assert.ok('document' in checked);
  for (const doc of [direct.document, checked.document, checked.document]) {
    assert.deepEqual(
      introspectionErrors(schema, doc).map((e) => e.message),
      [
        'GraphQL introspection has been disabled, but the requested query contained the field "__schema".',
        'GraphQL introspection has been disabled, but the requested query contained the field "queryType".',
      ],
    );
  }
  const plain = parseAndValidate(schema, '{ hello }', undefined);
  assert.ok('document' in plain);
  assert.deepEqual(introspectionErrors(schema, plain.document), []);
  assert.deepEqual(introspectionErrors(schema, plain.document), []);
});
