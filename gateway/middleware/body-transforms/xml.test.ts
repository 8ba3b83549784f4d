/**
 * XML bodies read into the reference's map (mxj's NewMapXml without casting) as a table: the
 * document in, the map out, or the error; plus documents no parser recursion could hold.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { xmlToMap, XmlError } from './xml.ts';

const cases: { name: string; xml: string | Buffer; map?: unknown; error?: RegExp }[] = [
  { name: 'an empty body is <_/>', xml: '', map: { _: '' } },
  { name: 'a text element is its text, trimmed', xml: '<a>\n  hi there \t</a>', map: { a: 'hi there' } },
  { name: 'an empty element is ""', xml: '<a><b/><c></c></a>', map: { a: { b: '', c: '' } } },
  {
    name: 'attributes under -name, text under #text',
    xml: '<a id="1" k=\'v\'>t</a>',
    map: { a: { '-id': '1', '-k': 'v', '#text': 't' } },
  },
  {
    name: 'a repeated name is a list in document order, even apart',
    xml: '<a><b>1</b><c>x</c><b>2</b><b><d>3</d></b></a>',
    map: { a: { b: ['1', '2', { d: '3' }], c: 'x' } },
  },
  {
    name: 'values stay strings',
    xml: '<a><n>1.5</n><t>true</t></a>',
    map: { a: { n: '1.5', t: 'true' } },
  },
  {
    name: 'namespace prefixes dropped from elements and attributes',
    xml: '<s:E xmlns:s="urn:s" xmlns="urn:d"><s:B s:x="1">v</s:B></s:E>',
    map: { E: { '-s': 'urn:s', '-xmlns': 'urn:d', B: { '-x': '1', '#text': 'v' } } },
  },
  {
    name: 'text before the first child stands for the element (kept as the reference reads it)',
    xml: '<a>lead<b>x</b>tail</a>',
    map: { a: 'lead' },
  },
  {
    name: 'text after a child is #text, the last piece wins',
    xml: '<a><b>x</b>one<!-- c -->two</a>',
    map: { a: { b: 'x', '#text': 'two' } },
  },
  {
    name: 'entities, character references and CDATA',
    xml: '<a x="&quot;&#x41;"><b>&lt;&amp;&gt;&apos;&#66;</b><c><![CDATA[<raw> & ]]></c></a>',
    map: { a: { '-x': '"A', b: "<&>'B", c: '<raw> &' } },
  },
  {
    name: 'declaration, comments, processing instructions and DOCTYPE skipped',
    xml: '\ufeff<?xml version="1.0"?><!DOCTYPE a [<!ENTITY e "x">]><!-- c --><?pi x?><a>1</a>',
    map: { a: '1' },
  },
  {
    name: 'a declared encoding is applied',
    xml: Buffer.concat([
      Buffer.from('<?xml version="1.0" encoding="ISO-8859-1"?><a>caf'),
      Buffer.from([0xe9]),
      Buffer.from('</a>'),
    ]),
    map: { a: 'café' },
  },
  { name: 'what follows the root is not read', xml: '<a>1</a><b>', map: { a: '1' } },
  { name: "a DTD's entity is not expanded", xml: '<!DOCTYPE a [<!ENTITY e "x">]><a>&e;</a>', error: /&e;/ },
  { name: 'a bare & is refused', xml: '<a>x & y</a>', error: /bare &/ },
  { name: 'mismatched tags', xml: '<a><b></a>', error: /<b> closed by <\/a>/ },
  { name: 'an unterminated document', xml: '<a><b>x</b>', error: /unexpected end/ },
  { name: 'no root element', xml: '  just text ', error: /no root element/ },
  { name: 'an unquoted attribute', xml: '<a x=1/>', error: /unquoted/ },
  {
    name: 'invalid UTF-8',
    xml: Buffer.from([0x3c, 0x61, 0x3e, 0xff, 0x3c, 0x2f, 0x61, 0x3e]),
    error: /decode/,
  },
];

for (const c of cases) {
  test(c.name, () => {
    const body = typeof c.xml === 'string' ? Buffer.from(c.xml) : c.xml;
    if (c.error !== undefined) {
      assert.throws(
        () => xmlToMap(body),
        (e: unknown) => e instanceof XmlError && c.error?.test(e.message) === true,
      );
    } else {
      assert.deepEqual(xmlToMap(body), c.map);
    }
  });
}

test('a long run of spaces in text is trimmed in linear time', () => {
  const xml = `<a>x${' '.repeat(500_000)}y${' '.repeat(500_000)}</a>`;
  const started = performance.now();
  assert.deepEqual(xmlToMap(Buffer.from(xml)), { a: `x${' '.repeat(500_000)}y` });
  assert.ok(performance.now() - started < 5000, 'quadratic trimming would take minutes');
});

test('deep nesting reads without recursion', () => {
  const depth = 100_000;
  const xml = `${'<a>'.repeat(depth)}x${'</a>'.repeat(depth)}`;
  let v: unknown = xmlToMap(Buffer.from(xml));
  let n = 0;
  while (typeof v === 'object' && v !== null && 'a' in v) {
    v = v.a;
    n++;
  }
  assert.equal(n, depth);
  assert.equal(v, 'x');
});
