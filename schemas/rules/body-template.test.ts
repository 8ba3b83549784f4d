import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseBodyTemplate, TemplateError } from './body-template.ts';

test('beyond the subset: refused, unsupported named; bad syntax invalid', () => {
  for (const [src, unsupported] of [
    ['{{template "x"}}', true],
    ['{{upper .a}}', true],
    ['{{.a.Method}}{{x.Y}}', true],
    ['{{if .a}}', false],
    ['{{end}}', false],
    ['{{.a', false],
  ] as const) {
    assert.throws(
      () => parseBodyTemplate(src),
      (e: unknown) => e instanceof TemplateError && e.unsupported === unsupported,
      src,
    );
  }
});
