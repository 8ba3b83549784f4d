/** Configuration in tests: the problems a refused configuration names. */
import assert from 'node:assert/strict';
import { ConfigError } from '../config.ts';

/** The problems of the ConfigError that `fn` throws; fails the test when it throws none. */
export function configProblems(fn: () => unknown): readonly string[] {
  try {
    fn();
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return assert.fail('expected a ConfigError');
}
