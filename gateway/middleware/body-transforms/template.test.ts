import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseBodyTemplate } from '../../../schemas/rules/body-template.ts';
import { goNumber, renderBodyTemplate } from './template.ts';

const data = { a: { b: 'x', n: 1000000 }, list: [1, 2, { k: 'v' }], m: { z: 1, a: 2 }, t: true, s: '<&>' };
const render = (src: string): string => renderBodyTemplate(parseBodyTemplate(src), data);

test('the subset renders as Go text/template does', () => {
  const rows: [string, string][] = [
    ['{{.a.b}} {{.a.n}} {{.missing}} {{.list}} {{.m}}', 'x 1e+06 <no value> [1 2 map[k:v]] map[a:2 z:1]'],
    ['{{range $i, $v := .list}}{{$i}}={{$v}};{{end}}', '0=1;1=2;2=map[k:v];'],
    ['{{range .m}}[{{.}}]{{else}}none{{end}}{{range .none}}x{{else}}none{{end}}', '[2][1]none'],
    ['{{if eq .a.b "y"}}y{{else if .t}}t{{else}}n{{end}}', 't'],
    ['{{with .a}}{{.b}}{{end}}  {{- " trimmed" }}', 'x trimmed'],
    ['{{printf "%s-%d-%.2f-%q" .a.b 42 3.14159 "q"}} {{.s | json}}', 'x-42-3.14-"q" "\\u003c\\u0026\\u003e"'],
    [
      '{{index .list 2 | jsonMarshal}} {{index .m "a"}} {{len .list}} {{$x := .a.b}}{{$x}}{{/* c */}}',
      '{"k":"v"} 2 3 x',
    ],
  ];
  for (const [src, want] of rows) assert.equal(render(src), want, src);
  assert.deepEqual([0, 123456, 1234567, 0.0001, 0.00001, -2.5].map(goNumber), [
    '0',
    '123456',
    '1.234567e+06',
    '0.0001',
    '1e-05',
    '-2.5',
  ]);
});
