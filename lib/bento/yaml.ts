/**
 * JSON values written as YAML for Bento, one key or item per line, remembering the document path
 * of every line: Bento reports problems as `(line,column) message`, and the line says which
 * field of the user's document it is about. Multi-line strings (Bloblang mappings) are block
 * scalars, so a mapping's own line and column can be worked out from Bento's.
 */
import { isPlainObject } from '../plain-object.ts';

/** What a line of the emitted YAML belongs to. */
export interface LineInfo {
  /** Document path of the value on this line, such as `pipeline.processors[0].mapping`. */
  path: string;
  /** For a block scalar: the line of its key (content lines follow) and the column of `|`. */
  block?: { keyLine: number; column: number };
}

/** Emitted YAML and the path of each line (index 0 is line 1). */
export interface Emitted {
  text: string;
  lines: LineInfo[];
}

const join = (base: string, key: string | number): string =>
  typeof key === 'number' ? `${base}[${key}]` : base === '' ? key : `${base}.${key}`;

/** Writes `value` (an object) as YAML with a path per line. */
export function emitYaml(value: Record<string, unknown>, base = ''): Emitted {
  const out: string[] = [];
  const lines: LineInfo[] = [];
  const push = (text: string, info: LineInfo): void => {
    out.push(text);
    lines.push(info);
  };
  const scalar = (v: unknown): string => JSON.stringify(v ?? null);

  const entry = (indent: string, lead: string, v: unknown, path: string): void => {
    // Bloblang (`mapping`, `check`) is always a block scalar, so its positions can be mapped.
    const bloblang = lead === '"mapping":' || lead === '"check":';
    if (typeof v === 'string' && (v.includes('\n') || bloblang) && !/^[ \t]/.test(v)) {
      const head = `${indent}${lead}`;
      const keyLine = out.length + 1;
      push(`${head} |-`, { path, block: { keyLine, column: head.length + 2 } });
      const inner = `${indent}    `;
      for (const l of v.split('\n'))
        push(l === '' ? '' : `${inner}${l}`, { path, block: { keyLine, column: head.length + 2 } });
      return;
    }
    if (Array.isArray(v)) {
      if (v.length === 0) {
        push(`${indent}${lead} []`, { path });
        return;
      }
      push(`${indent}${lead}`, { path });
      v.forEach((item, i) => {
        item_(`${indent}  `, item, join(path, i));
      });
      return;
    }
    if (v !== null && typeof v === 'object') {
      const keys = Object.keys(v);
      if (keys.length === 0) {
        push(`${indent}${lead} {}`, { path });
        return;
      }
      push(`${indent}${lead}`, { path });
      for (const k of keys)
        entry(`${indent}  `, `${JSON.stringify(k)}:`, (v as Record<string, unknown>)[k], join(path, k));
      return;
    }
    push(`${indent}${lead} ${scalar(v)}`, { path });
  };

  // An array item: `- ` then the value; an object item's first key shares the dash's line.
  const item_ = (indent: string, v: unknown, path: string): void => {
    if (isPlainObject(v) && Object.keys(v).length > 0) {
      const obj = v;
      const keys = Object.keys(obj);
      keys.forEach((k, i) => {
        const before = out.length;
        entry(`${indent}  `, `${JSON.stringify(k)}:`, obj[k], join(path, k));
        if (i === 0) {
          // Replace the first line's indentation with the dash.
          const first = out[before] ?? '';
          out[before] = `${indent}- ${first.slice(indent.length + 2)}`;
        }
      });
      return;
    }
    entry(indent, '-', v, path);
  };

  for (const k of Object.keys(value)) entry('', `${JSON.stringify(k)}:`, value[k], join(base, k));
  return { text: `${out.join('\n')}\n`, lines };
}

/**
 * A Bento problem `(line,column) message` as `<path>: message`, the position turned into the
 * mapping's own line and column for Bloblang; other messages are returned with `fallback`.
 */
export function locate(problem: string, emitted: Emitted, fallback: string): string {
  const m = /^(?:Error: )?\((\d+),(\d+)\)\s*(.*)$/s.exec(problem.trim());
  if (m === null) return `${fallback}: ${problem.trim().replace(/^Error: /, '')}`;
  const line = Number(m[1]);
  const column = Number(m[2]);
  const message = (m[3] ?? '').trim();
  const info = emitted.lines[line - 1];
  if (info === undefined) return `${fallback}: ${message}`;
  if (info.block !== undefined && line > info.block.keyLine) {
    const inLine = line - info.block.keyLine;
    const inColumn = column - info.block.column;
    const where = inColumn > 0 ? `line ${inLine} column ${inColumn}` : `line ${inLine}`;
    return `${info.path}: ${where}: ${message}`;
  }
  if (info.block !== undefined) {
    return `${info.path}: ${message}`;
  }
  return `${info.path}: ${message}`;
}
