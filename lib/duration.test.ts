import { test } from 'node:test';
import assert from 'node:assert/strict';
import { durationPatternOf, GO_UNITS, parseDuration } from './duration.ts';

test('parseDuration: Go durations, in the units a caller takes', () => {
  const config = ['ms', 's', 'm', 'h'] as const;
  const table: [string, number | undefined, number | undefined][] = [
    // text, every Go unit, config units
    ['1h30m', 5_400_000, 5_400_000],
    ['1m30s', 90_000, 90_000],
    ['1.5s', 1500, 1500],
    ['250ms', 250, 250],
    ['1000us', 1, undefined],
    ['1000µs', 1, undefined],
    ['1000000ns', 1, undefined],
    ['1h1ms', 3_600_001, 3_600_001],
    ['', undefined, undefined],
    ['10', undefined, undefined],
    ['h', undefined, undefined],
    ['5d', undefined, undefined],
    ['1s ', undefined, undefined],
    ['-1s', undefined, undefined],
  ];
  for (const [text, go, cfg] of table) {
    assert.equal(parseDuration(text), go, `${text} (Go units)`);
    assert.equal(parseDuration(text, config), cfg, `${text} (config units)`);
    const pattern = new RegExp(durationPatternOf(config));
    assert.equal(pattern.test(text), cfg !== undefined, `${text} (config pattern)`);
    assert.equal(
      new RegExp(durationPatternOf(GO_UNITS)).test(text),
      go !== undefined,
      `${text} (Go pattern)`,
    );
  }
});
