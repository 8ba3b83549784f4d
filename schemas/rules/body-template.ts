/**
 * Body templates (`extended_paths.transform` and `transform_response`): the subset of Go's
 * text/template svc serves, parsed once (by the webhooks and the gateway's writes, to refuse what
 * is beyond it, and by the gateway when routes load) and run per request over the parsed body.
 *
 * The subset (docs/gateway.md, "Body transforms"):
 * - text, and actions `{{ ... }}` with `{{-` / `-}}` trimming the spaces beside them;
 *   comments `{{/* ... *\/}}`;
 * - operands: `.` and fields `.a.b` (map keys), variables `$` (the whole body) and `$name`, with
 *   fields (`$v.a`); string literals ("..." and `...`), numbers, `true`, `false`, `nil`; a
 *   parenthesised pipeline;
 * - pipelines `x | f a | g`: the value on the left is the last argument of the function;
 * - `{{if p}} ... {{else if p}} ... {{else}} ... {{end}}`, `{{with p}} ... {{else}} ... {{end}}`,
 *   `{{range p}} ... {{else}} ... {{end}}` (lists, and maps in key order), with `$v :=` or
 *   `$i, $v :=`; `{{$x := p}}` and `{{$x = p}}`;
 * - functions: `printf` (%v %s %d %f %.Nf %q %t %x %%), `print`, `json` and `jsonMarshal` (JSON
 *   with sorted keys, as Go writes it), `index`, `len`, `eq`, `ne`, `lt`, `le`, `gt`, `ge`, `and`,
 *   `or`, `not`.
 * Values print as Go prints them: numbers as Go's `%v` of a float64 (`1e+06`), lists `[a b]`,
 * maps `map[k:v]`, a missing field `<no value>`, null `<nil>`. A missing field reads as nothing
 * (Go would stop on a field of a missing value); comparisons of numbers ignore int and float.
 * Anything else (`template`, `define`, `block`, `break`, `continue`, other functions, method
 * calls) is refused at write time by name.
 */
import { isPlainObject } from '../../lib/plain-object.ts';

/** A value of the data a template reads: parsed JSON. */
type Data = unknown;

/** A missing value (a field that is not there). */
const MISSING = Symbol('missing');

type Arg =
  | { k: 'field'; /** `dot`, or a variable (`$`, `$name`). */ base: string; path: string[] }
  | { k: 'lit'; v: Data }
  | { k: 'fn'; name: string }
  | { k: 'pipe'; p: Pipe };
type Cmd = Arg[];
interface Pipe {
  decl: string[];
  assign: boolean;
  cmds: Cmd[];
}
type Node =
  | { t: 'text'; s: string }
  | { t: 'out'; p: Pipe }
  | { t: 'if' | 'with'; p: Pipe; body: Node[]; else: Node[] }
  | { t: 'range'; p: Pipe; body: Node[]; else: Node[] };

/** A parsed template. */
export interface BodyTemplate {
  readonly nodes: readonly Node[];
}

/** Why a template is refused: beyond the subset (`unsupported`) or not a template at all. */
export class TemplateError extends Error {
  readonly unsupported: boolean;
  constructor(message: string, unsupported = false) {
    super(message);
    this.unsupported = unsupported;
  }
}

const FUNCTIONS = new Set([
  'printf',
  'print',
  'json',
  'jsonMarshal',
  'index',
  'len',
  'eq',
  'ne',
  'lt',
  'le',
  'gt',
  'ge',
  'and',
  'or',
  'not',
]);
const GO_ONLY = new Set(['template', 'define', 'block', 'break', 'continue']);

// ---------------------------------------------------------------------------------------------
// Parsing

type Tok =
  | { k: 'field'; path: string[] }
  | { k: 'var'; name: string; path: string[] }
  | { k: 'str'; v: string }
  | { k: 'num'; v: number }
  | { k: 'ident'; v: string }
  | { k: 'punct'; v: '|' | '(' | ')' | ':=' | '=' | ',' };

const FIELD_NAME = /[A-Za-z_][A-Za-z0-9_]*/y;

function fieldChain(s: string, at: number): { path: string[]; end: number } {
  const path: string[] = [];
  let i = at;
  while (s[i] === '.') {
    FIELD_NAME.lastIndex = i + 1;
    const m = FIELD_NAME.exec(s);
    if (m === null) break;
    path.push(m[0]);
    i = FIELD_NAME.lastIndex;
  }
  return { path, end: i };
}

function lex(action: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  while (i < action.length) {
    const c = action[i] ?? '';
    if (/\s/.test(c)) {
      i++;
    } else if (c === '.') {
      const { path, end } = fieldChain(action, i);
      if (path.length === 0) {
        if (/[A-Za-z0-9_]/.test(action[i + 1] ?? ''))
          throw new TemplateError(`bad field at ${action.slice(i)}`);
        i++;
      } else {
        i = end;
      }
      out.push({ k: 'field', path });
    } else if (c === '$') {
      FIELD_NAME.lastIndex = i + 1;
      const m = FIELD_NAME.exec(action);
      const name = m === null ? '$' : `$${m[0]}`;
      const { path, end } = fieldChain(action, m === null ? i + 1 : FIELD_NAME.lastIndex);
      out.push({ k: 'var', name, path });
      i = end;
    } else if (c === '"') {
      let j = i + 1;
      while (j < action.length && action[j] !== '"') j += action[j] === '\\' ? 2 : 1;
      if (j >= action.length) throw new TemplateError('unterminated string');
      try {
        out.push({ k: 'str', v: JSON.parse(action.slice(i, j + 1)) as string });
      } catch {
        throw new TemplateError(`bad string ${action.slice(i, j + 1)}`);
      }
      i = j + 1;
    } else if (c === '`') {
      const j = action.indexOf('`', i + 1);
      if (j === -1) throw new TemplateError('unterminated raw string');
      out.push({ k: 'str', v: action.slice(i + 1, j) });
      i = j + 1;
    } else if (/[-+0-9]/.test(c)) {
      const m = /[-+]?(0x[0-9a-fA-F]+|[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?)/y;
      m.lastIndex = i;
      const n = m.exec(action);
      if (n === null) throw new TemplateError(`bad number at ${action.slice(i)}`);
      out.push({ k: 'num', v: Number(n[0]) });
      i = m.lastIndex;
    } else if (/[A-Za-z_]/.test(c)) {
      FIELD_NAME.lastIndex = i;
      const m = FIELD_NAME.exec(action);
      const v = m?.[0] ?? c;
      i += v.length;
      if (action[i] === '.') {
        throw new TemplateError(`method and field calls on ${v} are not served`, true);
      }
      out.push({ k: 'ident', v });
    } else if (c === ':' && action[i + 1] === '=') {
      out.push({ k: 'punct', v: ':=' });
      i += 2;
    } else if (c === '|' || c === '(' || c === ')' || c === '=' || c === ',') {
      out.push({ k: 'punct', v: c });
      i++;
    } else {
      throw new TemplateError(`unexpected ${JSON.stringify(c)}`);
    }
  }
  return out;
}

class TokReader {
  i = 0;
  readonly toks: Tok[];
  constructor(toks: Tok[]) {
    this.toks = toks;
  }
  peek(): Tok | undefined {
    return this.toks[this.i];
  }
  next(): Tok | undefined {
    return this.toks[this.i++];
  }
  isPunct(v: string): boolean {
    const t = this.peek();
    return t?.k === 'punct' && t.v === v;
  }
}

function parsePipe(r: TokReader, allowDecl: 'none' | 'one' | 'two', inParens = false): Pipe {
  const pipe: Pipe = { decl: [], assign: false, cmds: [] };
  if (allowDecl !== 'none') {
    const save = r.i;
    const names: string[] = [];
    while (r.peek()?.k === 'var') {
      const v = r.next() as Extract<Tok, { k: 'var' }>;
      if (v.path.length > 0) break;
      names.push(v.name);
      if (r.isPunct(',') && allowDecl === 'two' && names.length === 1) {
        r.next();
        continue;
      }
      break;
    }
    if (names.length > 0 && (r.isPunct(':=') || r.isPunct('='))) {
      pipe.assign = (r.next() as { v: string }).v === '=';
      pipe.decl = names;
    } else {
      r.i = save;
    }
  }
  let cmd: Cmd = [];
  for (;;) {
    const t = r.peek();
    if (t === undefined || (inParens && t.k === 'punct' && t.v === ')')) break;
    r.next();
    if (t.k === 'punct') {
      if (t.v === '|') {
        if (cmd.length === 0) throw new TemplateError('missing command before |');
        pipe.cmds.push(cmd);
        cmd = [];
        continue;
      }
      if (t.v === '(') {
        cmd.push({ k: 'pipe', p: parsePipe(r, 'none', true) });
        if (!r.isPunct(')')) throw new TemplateError('unclosed (');
        r.next();
        if (r.peek()?.k === 'field')
          throw new TemplateError('fields of a parenthesised value are not served', true);
        continue;
      }
      throw new TemplateError(`unexpected ${t.v}`);
    }
    if (t.k === 'field') cmd.push({ k: 'field', base: 'dot', path: t.path });
    else if (t.k === 'var') cmd.push({ k: 'field', base: t.name, path: t.path });
    else if (t.k === 'str' || t.k === 'num') cmd.push({ k: 'lit', v: t.v });
    else if (t.v === 'true' || t.v === 'false') cmd.push({ k: 'lit', v: t.v === 'true' });
    else if (t.v === 'nil') cmd.push({ k: 'lit', v: null });
    else if (FUNCTIONS.has(t.v)) {
      if (cmd.length > 0)
        throw new TemplateError(`${t.v}: a function is called first in its command; write (${t.v} ...)`);
      cmd.push({ k: 'fn', name: t.v });
    } else {
      throw new TemplateError(
        `the function ${JSON.stringify(t.v)} (svc serves ${[...FUNCTIONS].join(', ')})`,
        true,
      );
    }
  }
  if (cmd.length === 0) throw new TemplateError('missing value for command');
  pipe.cmds.push(cmd);
  for (const c of pipe.cmds) {
    if (c[0]?.k !== 'fn' && c.length > 1)
      throw new TemplateError('too many values in a command: call a function first');
  }
  pipe.cmds.slice(1).forEach((c) => {
    if (c[0]?.k !== 'fn') throw new TemplateError('a value after | must be a function');
  });
  return pipe;
}

/** Splits a template into text and actions, applying trim markers and dropping comments. */
function split(src: string): ({ text: string } | { action: string })[] {
  const out: ({ text: string } | { action: string })[] = [];
  let i = 0;
  let trimNext = false;
  while (i < src.length) {
    const open = src.indexOf('{{', i);
    let text = src.slice(i, open === -1 ? src.length : open);
    if (trimNext) text = text.replace(/^\s+/, '');
    trimNext = false;
    if (open === -1) {
      out.push({ text });
      break;
    }
    let start = open + 2;
    if (src[start] === '-' && /\s/.test(src[start + 1] ?? '')) {
      text = text.replace(/\s+$/, '');
      start += 2;
    }
    out.push({ text });
    // Find the closing }} outside string literals.
    let j = start;
    let quote: string | undefined;
    for (; j < src.length; j++) {
      const c = src[j];
      if (quote !== undefined) {
        if (c === '\\' && quote === '"') j++;
        else if (c === quote) quote = undefined;
      } else if (c === '"' || c === '`') {
        quote = c;
      } else if (c === '}' && src[j + 1] === '}') break;
    }
    if (j >= src.length) throw new TemplateError('unclosed action: {{ without }}');
    let body = src.slice(start, j);
    if (/\s-$/.test(body)) {
      body = body.slice(0, -2);
      trimNext = true;
    }
    const trimmed = body.trim();
    if (!(trimmed.startsWith('/*') && trimmed.endsWith('*/'))) out.push({ action: body });
    i = j + 2;
  }
  return out;
}

/** Parses a template of the subset; throws a TemplateError otherwise. */
export function parseBodyTemplate(src: string): BodyTemplate {
  const parts = split(src);
  let at = 0;
  const block = (
    inside: string | undefined,
  ): { nodes: Node[]; ended: 'end' | 'else' | 'elseif'; rest?: TokReader } => {
    const nodes: Node[] = [];
    while (at < parts.length) {
      const part = parts[at++];
      if (part === undefined) break;
      if ('text' in part) {
        if (part.text !== '') nodes.push({ t: 'text', s: part.text });
        continue;
      }
      const r = new TokReader(lex(part.action));
      const first = r.peek();
      if (first?.k === 'ident' && GO_ONLY.has(first.v)) {
        throw new TemplateError(`the action {{${first.v}}}`, true);
      }
      if (first?.k === 'ident' && first.v === 'end') {
        if (inside === undefined) throw new TemplateError('unexpected {{end}}');
        if (r.toks.length > 1) throw new TemplateError('{{end}} takes nothing');
        return { nodes, ended: 'end' };
      }
      if (first?.k === 'ident' && first.v === 'else') {
        if (inside === undefined) throw new TemplateError('unexpected {{else}}');
        r.next();
        const then = r.peek();
        if (then?.k === 'ident' && (then.v === 'if' || then.v === 'with')) {
          return { nodes, ended: 'elseif', rest: r };
        }
        if (then !== undefined) throw new TemplateError('{{else}} takes nothing but if or with');
        return { nodes, ended: 'else' };
      }
      if (first?.k === 'ident' && (first.v === 'if' || first.v === 'with' || first.v === 'range')) {
        r.next();
        nodes.push(control(first.v, r));
        continue;
      }
      const p = parsePipe(r, 'one');
      nodes.push({ t: 'out', p });
    }
    if (inside !== undefined) throw new TemplateError(`{{${inside}}} without {{end}}`);
    return { nodes, ended: 'end' };
  };
  const control = (kind: 'if' | 'with' | 'range', r: TokReader): Node => {
    const p = parsePipe(r, kind === 'range' ? 'two' : kind === 'with' ? 'one' : 'none');
    const body = block(kind);
    let otherwise: Node[] = [];
    if (body.ended === 'else') {
      const e = block(kind);
      if (e.ended !== 'end') throw new TemplateError(`{{else}} after {{else}} in {{${kind}}}`);
      otherwise = e.nodes;
    } else if (body.ended === 'elseif' && body.rest !== undefined) {
      if (kind === 'range') throw new TemplateError('{{else if}} in {{range}}');
      const word = (body.rest.next() as { v: 'if' | 'with' }).v;
      otherwise = [control(word, body.rest)];
    }
    return { t: kind, p, body: body.nodes, else: otherwise };
  };
  return { nodes: block(undefined).nodes };
}

/** A template's source as the definition holds it (`blob`: base64), or an error message. */
export function templateSource(data: { template_mode?: string; template_source?: string }): string {
  const raw = data.template_source ?? '';
  if ((data.template_mode ?? '') === 'file') {
    throw new TemplateError(
      'template_mode file (write the template in template_source, base64, with template_mode blob)',
      true,
    );
  }
  const decoded = Buffer.from(raw, 'base64').toString('utf8');
  if (
    Buffer.from(decoded, 'utf8').toString('base64').replace(/=+$/, '') !==
    raw.replace(/\s/g, '').replace(/=+$/, '')
  ) {
    throw new TemplateError(
      'template_source is not base64: encode the template, as in echo -n "{{.a}}" | base64',
    );
  }
  return decoded;
}

// ---------------------------------------------------------------------------------------------
// Running

/** Go's `%v` of a float64. */
export function goNumber(n: number): string {
  if (Number.isNaN(n)) return 'NaN';
  if (!Number.isFinite(n)) return n > 0 ? '+Inf' : '-Inf';
  if (n === 0) return Object.is(n, -0) ? '-0' : '0';
  const e = n.toExponential();
  const exp = Number(e.slice(e.indexOf('e') + 1));
  // strconv's 'g' with the shortest precision: %e when the exponent is < -4 or >= 6.
  if (exp < -4 || exp >= 6) return goExp(e);
  return String(n);
}

function goExp(e: string): string {
  const [mant = '', ex = '0'] = e.split('e');
  const sign = ex.startsWith('-') ? '-' : '+';
  const digits = ex.replace(/^[-+]/, '');
  return `${mant}e${sign}${digits.padStart(2, '0')}`;
}

/** How Go's fmt prints a value. */
export function goPrint(v: Data): string {
  if (v === MISSING || v === undefined) return '<no value>';
  if (v === null) return '<nil>';
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return goNumber(v);
  if (typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return `[${v.map((x) => goPrint(x as Data)).join(' ')}]`;
  if (typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return `map[${Object.keys(o)
      .sort()
      .map((k) => `${k}:${goPrint(o[k])}`)
      .join(' ')}]`;
  }
  return '<no value>'; // MISSING (JSON data holds nothing else)
}

/** JSON as Go's encoding/json writes it: map keys sorted, `<`, `>` and `&` escaped. */
export function goJson(v: Data): string {
  const sorted = (x: unknown): unknown => {
    if (Array.isArray(x)) return x.map(sorted);
    if (x !== null && typeof x === 'object') {
      const o = x as Record<string, unknown>;
      return Object.fromEntries(
        Object.keys(o)
          .sort()
          .map((k) => [k, sorted(o[k])]),
      );
    }
    return x;
  };
  const json = JSON.stringify(sorted(v === MISSING || v === undefined ? null : v)) as string | undefined;
  return (json ?? 'null').replaceAll('<', '\\u003c').replaceAll('>', '\\u003e').replaceAll('&', '\\u0026');
}

function truth(v: unknown): boolean {
  if (v === MISSING || v === undefined || v === null || v === false || v === 0 || v === '') return false;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === 'object') return Object.keys(v).length > 0;
  return true;
}

function field(base: unknown, path: readonly string[]): unknown {
  let v = base;
  for (const name of path) {
    if (!isPlainObject(v)) return MISSING;
    v = Object.hasOwn(v, name) ? v[name] : MISSING;
  }
  return v;
}

function compare(a: unknown, b: unknown): number {
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  if (typeof a === 'string' && typeof b === 'string') return a < b ? -1 : a > b ? 1 : 0;
  throw new TemplateError(`can't compare ${goPrint(a)} and ${goPrint(b)}`);
}

function printf(format: string, args: unknown[]): string {
  let n = 0;
  return format.replace(
    /%(-?\d*)(?:\.(\d+))?([vsdfqtx%])/g,
    (_all, width: string, prec: string | undefined, verb: string) => {
      if (verb === '%') return '%';
      if (n >= args.length) return `%!${verb}(MISSING)`;
      const a = args[n++];
      let s: string;
      switch (verb) {
        case 'd':
          s = typeof a === 'number' ? String(Math.trunc(a)) : `%!d(${goPrint(a)})`;
          break;
        case 'f':
          s = typeof a === 'number' ? a.toFixed(prec === undefined ? 6 : Number(prec)) : `%!f(${goPrint(a)})`;
          break;
        case 'q':
          s = JSON.stringify(typeof a === 'string' ? a : goPrint(a));
          break;
        case 't':
          s = typeof a === 'boolean' ? String(a) : `%!t(${goPrint(a)})`;
          break;
        case 'x':
          s =
            typeof a === 'number'
              ? Math.trunc(a).toString(16)
              : Buffer.from(typeof a === 'string' ? a : goPrint(a)).toString('hex');
          break;
        default:
          s = goPrint(a);
          if (prec !== undefined && verb === 's') s = s.slice(0, Number(prec));
      }
      const w = Number(width);
      if (width !== '' && Math.abs(w) > s.length) s = w < 0 ? s.padEnd(-w) : s.padStart(w);
      return s;
    },
  );
}

function call(name: string, args: unknown[]): unknown {
  switch (name) {
    case 'printf':
      return printf(typeof args[0] === 'string' ? args[0] : goPrint(args[0]), args.slice(1));
    case 'print':
      return args.map((a) => goPrint(a)).join('');
    case 'json':
    case 'jsonMarshal':
      return goJson(args[0]);
    case 'index': {
      let v = args[0];
      for (const k of args.slice(1)) {
        if (Array.isArray(v) && typeof k === 'number') {
          if (k < 0 || k >= v.length) throw new TemplateError(`index ${String(k)} out of range`);
          v = v[k] as unknown;
        } else if (isPlainObject(v) && typeof k === 'string') {
          v = Object.hasOwn(v, k) ? v[k] : MISSING;
        } else {
          throw new TemplateError(`can't index ${goPrint(v)} with ${goPrint(k)}`);
        }
      }
      return v;
    }
    case 'len': {
      const v = args[0];
      if (typeof v === 'string') return Buffer.byteLength(v);
      if (Array.isArray(v)) return v.length;
      if (v !== null && typeof v === 'object') return Object.keys(v).length;
      throw new TemplateError(`len of ${goPrint(v)}`);
    }
    case 'eq':
      return args.slice(1).some((b) => args[0] === b);
    case 'ne':
      return args[0] !== args[1];
    case 'lt':
      return compare(args[0], args[1]) < 0;
    case 'le':
      return compare(args[0], args[1]) <= 0;
    case 'gt':
      return compare(args[0], args[1]) > 0;
    case 'ge':
      return compare(args[0], args[1]) >= 0;
    case 'and': {
      let last: unknown = true;
      for (const a of args) {
        last = a;
        if (!truth(a)) return a;
      }
      return last;
    }
    case 'or': {
      let last: unknown = false;
      for (const a of args) {
        last = a;
        if (truth(a)) return a;
      }
      return last;
    }
    case 'not':
      return !truth(args[0]);
    default:
      throw new TemplateError(`function ${name}`);
  }
}

class Scope {
  readonly vars: Map<string, unknown>;
  readonly parent: Scope | undefined;
  constructor(vars: Map<string, unknown>, parent: Scope | undefined) {
    this.vars = vars;
    this.parent = parent;
  }
  #holder(name: string): Map<string, unknown> {
    if (this.vars.has(name)) return this.vars;
    if (this.parent === undefined) throw new TemplateError(`undefined variable ${name}`);
    return this.parent.#holder(name);
  }
  get(name: string): unknown {
    return this.#holder(name).get(name);
  }
  set(name: string, v: unknown): void {
    this.#holder(name).set(name, v);
  }
}

function evalPipe(p: Pipe, dot: unknown, scope: Scope): unknown {
  let value: unknown = MISSING;
  let first = true;
  for (const cmd of p.cmds) {
    const head = cmd[0];
    const arg = (a: Arg): unknown => {
      switch (a.k) {
        case 'field':
          return field(a.base === 'dot' ? dot : scope.get(a.base), a.path);
        case 'lit':
          return a.v;
        case 'pipe':
          return evalPipe(a.p, dot, scope);
        case 'fn':
          throw new TemplateError(`${a.name} is a function`);
      }
    };
    if (head?.k === 'fn') {
      const args = cmd.slice(1).map(arg);
      if (!first) args.push(value);
      value = call(head.name, args);
    } else if (head !== undefined) {
      value = arg(head);
    }
    first = false;
  }
  if (p.decl.length === 1) {
    const name = p.decl[0] ?? '';
    if (p.assign) scope.set(name, value);
    else scope.vars.set(name, value);
  }
  return value;
}

function run(nodes: readonly Node[], dot: unknown, scope: Scope, out: string[]): void {
  for (const n of nodes) {
    switch (n.t) {
      case 'text':
        out.push(n.s);
        break;
      case 'out': {
        const v = evalPipe(n.p, dot, scope);
        if (n.p.decl.length === 0) out.push(goPrint(v));
        break;
      }
      case 'if': {
        const inner = new Scope(new Map(), scope);
        run(truth(evalPipe(n.p, dot, inner)) ? n.body : n.else, dot, inner, out);
        break;
      }
      case 'with': {
        const inner = new Scope(new Map(), scope);
        const v = evalPipe(n.p, dot, inner);
        if (truth(v)) run(n.body, v, inner, out);
        else run(n.else, dot, inner, out);
        break;
      }
      case 'range': {
        const decl = n.p.decl;
        const v = evalPipe({ ...n.p, decl: [] }, dot, scope);
        const entries: [unknown, unknown][] = Array.isArray(v)
          ? v.map((x, i) => [i, x])
          : v !== null && typeof v === 'object'
            ? Object.keys(v)
                .sort()
                .map((k) => [k, (v as Record<string, unknown>)[k]])
            : typeof v === 'number' && Number.isInteger(v) && v >= 0
              ? Array.from({ length: v }, (_, i) => [i, i])
              : v === MISSING || v === null
                ? []
                : (() => {
                    throw new TemplateError(`range can't iterate over ${goPrint(v)}`);
                  })();
        if (entries.length === 0) {
          run(n.else, dot, new Scope(new Map(), scope), out);
          break;
        }
        for (const [k, x] of entries) {
          const inner = new Scope(new Map(), scope);
          if (decl.length === 1) inner.vars.set(decl[0] ?? '', x);
          if (decl.length === 2) {
            inner.vars.set(decl[0] ?? '', k);
            inner.vars.set(decl[1] ?? '', x);
          }
          run(n.body, x, inner, out);
        }
        break;
      }
    }
  }
}

/** Runs a parsed template over `data`; throws a TemplateError when it fails on this data. */
export function renderBodyTemplate(t: BodyTemplate, data: unknown): string {
  const out: string[] = [];
  run(t.nodes, data, new Scope(new Map([['$', data]]), undefined), out);
  return out.join('');
}

/**
 * Why `template_data` can't be served (a message and whether it is beyond the subset), or
 * undefined. `xml` input is refused by name.
 */
export function templateDataProblem(data: {
  input_type?: string;
  template_mode?: string;
  template_source?: string;
}): { field: string; message: string; unsupported: boolean } | undefined {
  if (data.input_type === 'xml') {
    return { field: 'input_type', message: 'xml input (templates read JSON bodies)', unsupported: true };
  }
  try {
    parseBodyTemplate(templateSource(data));
    return undefined;
  } catch (err) {
    if (!(err instanceof TemplateError)) throw err;
    const field = data.template_mode === 'file' ? 'template_mode' : 'template_source';
    return { field, message: err.message, unsupported: err.unsupported };
  }
}
