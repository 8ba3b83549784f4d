/**
 * Body templates (`extended_paths.transform` and `transform_response`): the subset of Go's
 * text/template svc serves, parsed here once (by the webhooks and the gateway's writes, to refuse
 * what is beyond it, and by the gateway when routes load). The body-transforms middleware runs the
 * parsed template per request over the parsed body, JSON or XML
 * (gateway/middleware/body-transforms/template.ts).
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

/** An operand of a command: a field or variable, a literal, a function name, a parenthesised pipeline. */
export type TemplateArg =
  | { k: 'field'; /** `dot`, or a variable (`$`, `$name`). */ base: string; path: string[] }
  | { k: 'lit'; v: unknown }
  | { k: 'fn'; name: string }
  | { k: 'pipe'; p: TemplatePipe };
/** A command: a function and its arguments, or one operand. */
export type TemplateCommand = TemplateArg[];
/** A pipeline `x | f a | g`, with the variables it declares (`$v :=`) or assigns (`$v =`). */
export interface TemplatePipe {
  decl: string[];
  assign: boolean;
  cmds: TemplateCommand[];
}
/** A node of a parsed template: text, an action printing a pipeline, or a control block. */
export type TemplateNode =
  | { t: 'text'; s: string }
  | { t: 'out'; p: TemplatePipe }
  | { t: 'if' | 'with'; p: TemplatePipe; body: TemplateNode[]; else: TemplateNode[] }
  | { t: 'range'; p: TemplatePipe; body: TemplateNode[]; else: TemplateNode[] };

/** A parsed template; the body-transforms middleware runs it (gateway/middleware/body-transforms/template.ts). */
export interface BodyTemplate {
  readonly nodes: readonly TemplateNode[];
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

function parsePipe(r: TokReader, allowDecl: 'none' | 'one' | 'two', inParens = false): TemplatePipe {
  const pipe: TemplatePipe = { decl: [], assign: false, cmds: [] };
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
  let cmd: TemplateCommand = [];
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
  ): { nodes: TemplateNode[]; ended: 'end' | 'else' | 'elseif'; rest?: TokReader } => {
    const nodes: TemplateNode[] = [];
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
  const control = (kind: 'if' | 'with' | 'range', r: TokReader): TemplateNode => {
    const p = parsePipe(r, kind === 'range' ? 'two' : kind === 'with' ? 'one' : 'none');
    const body = block(kind);
    let otherwise: TemplateNode[] = [];
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

/**
 * Why `template_data` can't be served (a message and whether it is beyond the subset), or
 * undefined. Both input types are served: `json`, and `xml` read into a map the way the
 * reference reads it (gateway/middleware/body-transforms/xml.ts).
 */
export function templateDataProblem(data: {
  input_type?: string;
  template_mode?: string;
  template_source?: string;
}): { field: string; message: string; unsupported: boolean } | undefined {
  try {
    parseBodyTemplate(templateSource(data));
    return undefined;
  } catch (err) {
    if (!(err instanceof TemplateError)) throw err;
    const field = data.template_mode === 'file' ? 'template_mode' : 'template_source';
    return { field, message: err.message, unsupported: err.unsupported };
  }
}
