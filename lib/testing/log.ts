/** A logger for tests that keeps its lines, to look for messages and fields in them. */
import type { Logger } from '../log.ts';

/** One line a recording logger kept: its fields include those of the parent loggers. */
export interface LoggedLine {
  level: string;
  message: string;
  fields: Record<string, unknown>;
}

/** A logger that appends every line, with the fields of its parents, to `lines`. */
export function recordingLogger(lines: LoggedLine[] = []): Logger & { lines: LoggedLine[] } {
  const make = (base: Record<string, unknown>): Logger => {
    const at =
      (level: string) =>
      (message: string, fields: Record<string, unknown> = {}): void => {
        lines.push({ level, message, fields: { ...base, ...fields } });
      };
    return {
      debug: at('debug'),
      info: at('info'),
      warn: at('warn'),
      error: at('error'),
      child: (fields) => make({ ...base, ...fields }),
    };
  };
  return Object.assign(make({}), { lines });
}
