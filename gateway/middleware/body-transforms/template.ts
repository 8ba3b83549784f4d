/**
 * The interpreter of body templates: runs a template parsed by schemas/rules/body-template.ts
 * (which holds the subset served and refuses the rest at write time) over a request's or a
 * response's parsed JSON body, printing values as Go's text/template and fmt print them.
 */
import { isPlainObject } from '../../../lib/plain-object.ts';
import {
  TemplateError,
  type BodyTemplate,
  type TemplateArg,
  type TemplateNode,
  type TemplatePipe,
} from '../../../schemas/rules/body-template.ts';

/** A value of the data a template reads: parsed JSON. */
type Data = unknown;

/** A missing value (a field that is not there). */
const MISSING = Symbol('missing');

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

function evalPipe(p: TemplatePipe, dot: unknown, scope: Scope): unknown {
  let value: unknown = MISSING;
  let first = true;
  for (const cmd of p.cmds) {
    const head = cmd[0];
    const arg = (a: TemplateArg): unknown => {
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

function run(nodes: readonly TemplateNode[], dot: unknown, scope: Scope, out: string[]): void {
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
