import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseDuration } from './global.ts';

test('parseDuration', () => {
  const table: [string, number | undefined][] = [
    ['1s', 1000],
    ['1m30s', 90_000],
    ['2h', 7_200_000],
    ['1.5s', 1500],
    ['250ms', 250],
    ['1000us', 1],
    ['1000000ns', 1],
    ['', undefined],
    ['1', undefined],
    ['s', undefined],
    ['1x', undefined],
    ['1s ', undefined],
  ];
  for (const [text, ms] of table) assert.equal(parseDuration(text), ms, text);
});
