/**
 * Configuration is read once at start from a file, environment variables and flags (later
 * sources win), strictly decoded against a schema, frozen and passed down. This is the only
 * module that reads `process.env`.
 */
import { readFileSync } from 'node:fs';
import type * as Yaml from 'yaml';
import type { JsonSchema } from '../schemas/json-schema.ts';
import { compile } from '../schemas/validate.ts';
import { InputError, errorMessage } from './errors.ts';
import { isPlainObject } from './plain-object.ts';
import { durationPatternOf, parseDuration as parseUnits, type DurationUnit } from './duration.ts';
import { LOG_LEVELS } from './log.ts';
import { lazyModule } from './lazy.ts';

/** The parser of `--config` files, loaded only when one is given. */
const yaml = lazyModule<typeof Yaml>(import.meta.url, 'yaml');

/** A snapshot of the environment. */
export function environment(): Readonly<Record<string, string | undefined>> {
  return Object.freeze({ ...process.env });
}

/** Where a config key may also come from. */
export interface ConfigSource {
  /** Environment variable, e.g. `SVC_GW_SECRET`. */
  env?: string;
  /** Command-line flag without dashes, e.g. `secret` for `--secret`. */
  flag?: string;
}

/**
 * The environment variable and flag of each key of `schema`, in the schema's order (the order
 * of the flags a message lists): `<envPrefix><KEY>` and `--<key>`, the key's words (snake_case
 * or camelCase) upper-cased and joined by `_`, or lower-cased and joined by `-`; `named` gives
 * a key's variable or flag where it has another name.
 */
export function configSources(
  schema: JsonSchema,
  envPrefix: string,
  named: Readonly<Record<string, ConfigSource>> = {},
): Readonly<Record<string, ConfigSource>> {
  const sources: Record<string, ConfigSource> = {};
  for (const key of Object.keys(schema.properties ?? {})) {
    const words = key.split(/_|(?=[A-Z])/).map((w) => w.toLowerCase());
    sources[key] = { env: envPrefix + words.join('_').toUpperCase(), flag: words.join('-'), ...named[key] };
  }
  return Object.freeze(sources);
}

/**
 * How to set `key`, for messages: `set the flag --x, the environment variable X, or \`x\` in the
 * --config file` (the flag and the variable when it has them).
 */
export function whereToSet(key: string, sources: Readonly<Record<string, ConfigSource>>): string {
  const src = sources[key];
  const where = [
    src?.flag === undefined ? undefined : `the flag --${src.flag}`,
    src?.env === undefined ? undefined : `the environment variable ${src.env}`,
    `\`${key}\` in the --config file`,
  ].filter((w) => w !== undefined);
  const last = where.pop() ?? '';
  return `set ${where.length > 0 ? `${where.join(', ')}, or ${last}` : last}`;
}

/** Refused configuration: every problem, each naming where the bad value came from. */
export class ConfigError extends InputError {
  readonly problems: readonly string[];
  constructor(component: string, problems: readonly string[]) {
    super('CFG_ERR_INVALID', `${component}: invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.problems = problems;
  }
}

/**
 * Reads configuration for `component`. `schema` is a closed object schema whose top-level
 * properties are the config keys; `sources` maps keys to their env variable and flag.
 * A file (YAML or JSON) is read from the flag `--config` when given.
 */
export function loadConfig<T>(opts: {
  component: string;
  schema: JsonSchema;
  sources: Readonly<Record<string, ConfigSource>>;
  argv?: readonly string[];
  env?: Readonly<Record<string, string | undefined>>;
  /** Rules across keys; runs on the coerced values even when the schema found problems. */
  rules?: (raw: Readonly<Record<string, unknown>>) => string[];
}): Readonly<T> {
  const problems: string[] = [];
  const env = opts.env ?? environment();
  const flags = parseFlags(opts.argv ?? [], opts.sources, problems);
  const origin = new Map<string, string>();

  let raw: Record<string, unknown> = {};
  const file = flags.get('config');
  flags.delete('config');
  if (file !== undefined) {
    try {
      const parsed: unknown = yaml().parse(readFileSync(file, 'utf8'));
      if (isPlainObject(parsed)) {
        raw = parsed;
        for (const key of Object.keys(raw)) origin.set(key, `${key} in ${file}`);
      } else if (parsed !== null && parsed !== undefined) {
        problems.push(`${file}: must hold a mapping of configuration keys`);
      }
    } catch (err) {
      problems.push(`${file}: ${errorMessage(err)}`);
    }
  }
  for (const [key, src] of Object.entries(opts.sources)) {
    const fromEnv = src.env === undefined ? undefined : env[src.env];
    if (fromEnv !== undefined && fromEnv !== '' && src.env !== undefined) {
      raw[key] = fromEnv;
      origin.set(key, `environment variable ${src.env}`);
    }
    const fromFlag = flags.get(key);
    if (fromFlag !== undefined) {
      raw[key] = fromFlag;
      origin.set(key, `flag --${src.flag ?? key}`);
    }
  }
  for (const p of compile(opts.schema, { forConfig: true })(raw)) {
    const top = p.path.split(/[.[]/)[0] ?? '';
    problems.push(`${origin.get(top) ?? top}: ${p.message}${p.path === top ? '' : ` (at ${p.path})`}`);
  }
  if (opts.rules) problems.push(...opts.rules(raw));
  if (problems.length > 0) throw new ConfigError(opts.component, problems);
  return deepFreeze(raw) as Readonly<T>;
}

/**
 * The units of a configuration duration: a millisecond and up (the parts' timers count
 * milliseconds; a setting in `us` or `ns` would be a mistake, and is named as one).
 */
const CONFIG_UNITS: readonly DurationUnit[] = ['ms', 's', 'm', 'h'];

/** Milliseconds of a duration such as `10h`, `1h30m`, `45s` or `250ms`; undefined if malformed. */
export function parseDuration(text: string): number | undefined {
  return parseUnits(text, CONFIG_UNITS);
}

/** Schema of a duration string for {@link parseDuration}. */
export const durationPattern = durationPatternOf(CONFIG_UNITS);

/** `--name value`, `--name=value` and bare boolean `--name`; keyed by config key. */
function parseFlags(
  argv: readonly string[],
  sources: Readonly<Record<string, ConfigSource>>,
  problems: string[],
): Map<string, string> {
  const byFlag = new Map<string, string>([['config', 'config']]);
  for (const [key, src] of Object.entries(sources)) byFlag.set(src.flag ?? key, key);
  const out = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    const m = /^--([a-z0-9][a-z0-9-]*)(?:=(.*))?$/.exec(arg);
    if (!m?.[1]) {
      problems.push(`argument ${JSON.stringify(arg)}: expected --flag or --flag=value`);
      continue;
    }
    const key = byFlag.get(m[1]);
    if (key === undefined) {
      problems.push(`flag --${m[1]}: unknown (known: ${[...byFlag.keys()].map((f) => `--${f}`).join(', ')})`);
      continue;
    }
    let value = m[2];
    if (value === undefined) {
      const next = argv[i + 1];
      if (next !== undefined && !next.startsWith('--')) {
        value = next;
        i++;
      } else {
        value = 'true';
      }
    }
    out.set(key, value);
  }
  return out;
}

function deepFreeze(value: unknown): unknown {
  if (value !== null && typeof value === 'object') {
    for (const v of Object.values(value)) deepFreeze(v);
    Object.freeze(value);
  }
  return value;
}

/**
 * The keys of a server's configuration that mean the same in each server (the gateway, the
 * dashboard): the lowest level it logs, and how long its in-flight requests get on SIGTERM.
 */
export const serverProcessProperties: Readonly<Record<'log_level' | 'shutdown_timeout_ms', JsonSchema>> = {
  log_level: {
    type: 'string',
    enum: [...LOG_LEVELS],
    default: 'info',
    description: 'Lowest level logged.',
  },
  shutdown_timeout_ms: {
    type: 'integer',
    minimum: 0,
    default: 10000,
    description: 'On SIGTERM, milliseconds in-flight requests get to finish before the process exits.',
  },
};
