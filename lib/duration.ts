/**
 * Durations written as Go writes them (`1m30s`, `250ms`, `1.5h`): one or more number-unit
 * pairs, no spaces, no sign. The one parser of the project: the configuration of the parts
 * (lib/config.ts, whole milliseconds and up) and the OAS translator (schemas/oas/global.ts,
 * every unit Go knows) read durations through it, each with its units.
 */

/** Milliseconds per unit, every unit Go's time.ParseDuration takes. */
const MS: Readonly<Record<DurationUnit, number>> = {
  h: 3_600_000,
  m: 60_000,
  s: 1000,
  ms: 1,
  us: 1e-3,
  µs: 1e-3,
  ns: 1e-6,
};

/** A unit of a duration. */
export type DurationUnit = 'h' | 'm' | 's' | 'ms' | 'us' | 'µs' | 'ns';

/** Every unit Go takes. */
export const GO_UNITS: readonly DurationUnit[] = ['h', 'm', 's', 'ms', 'us', 'µs', 'ns'];

/** The alternation of `units`, longest first, so that `ms` is not read as `m` then `s`. */
function alternation(units: readonly DurationUnit[]): string {
  return [...units].sort((a, b) => b.length - a.length).join('|');
}

/**
 * Milliseconds of a duration such as `10h`, `1h30m`, `45s`, `250ms` or `1.5s` in `units`;
 * undefined when it is malformed or uses another unit.
 */
export function parseDuration(text: string, units: readonly DurationUnit[] = GO_UNITS): number | undefined {
  if (text === '') return undefined;
  const part = new RegExp(`([0-9]+(?:\\.[0-9]+)?)(${alternation(units)})`, 'y');
  let total = 0;
  while (part.lastIndex < text.length) {
    const m = part.exec(text);
    if (m === null) return undefined;
    total += Number(m[1]) * MS[m[2] as DurationUnit];
  }
  return total;
}

/** A JSON Schema `pattern` taking exactly what {@link parseDuration} takes in `units`. */
export function durationPatternOf(units: readonly DurationUnit[]): string {
  return `^(\\d+(\\.\\d+)?(${alternation(units)}))+$`;
}
