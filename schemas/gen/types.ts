import type { JsonSchema, KindDefinition } from '../json-schema.ts';
import { API_VERSION } from '../common.ts';

/**
 * Emits TypeScript declarations for schemas. Every schema with a `title` becomes a named
 * interface (or type) that other declarations refer to; two titled schemas with one name
 * must describe the same type, or generation fails.
 */
export class TypeEmitter {
  /** Declarations by name, in the order they were first met. */
  readonly #named = new Map<string, { shape: string; text: string }>();

  /** Declares `name` for `schema` (the schema's own title is ignored) and returns the name. */
  declare(name: string, schema: JsonSchema): string {
    const body = this.#body(schema, '');
    const shape = stripComments(body);
    const known = this.#named.get(name);
    if (known) {
      if (known.shape !== shape) throw new Error(`schemas: two different schemas are both titled ${name}`);
      return name;
    }
    const decl = body.startsWith('{') ? `export interface ${name} ${body}` : `export type ${name} = ${body};`;
    this.#named.set(name, { shape, text: `${doc(schema.description, '')}${decl}\n` });
    return name;
  }

  /** Declares a custom resource kind: its object type, spec and status. */
  declareKind(def: KindDefinition): void {
    const spec = this.declare(def.spec.title ?? `${def.kind}Spec`, def.spec);
    const status = this.declare(def.status.title ?? `${def.kind}Status`, def.status);
    const text =
      `${doc(def.description, '')}export interface ${def.kind} {\n` +
      `  apiVersion: '${API_VERSION}';\n  kind: '${def.kind}';\n  metadata: V1ObjectMeta;\n` +
      `  spec: ${spec};\n  status?: ${status};\n}\n`;
    this.#named.set(def.kind, { shape: text, text });
  }

  /** All declarations, sorted by name so that output is stable. */
  render(): string {
    return [...this.#named.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([, d]) => d.text)
      .join('\n');
  }

  #ref(schema: JsonSchema, indent: string): string {
    return schema.title ? this.declare(schema.title, schema) : this.#body(schema, indent);
  }

  #body(schema: JsonSchema, indent: string): string {
    if (schema.anyOf) return schema.anyOf.map((s) => wrap(this.#ref(s, indent))).join(' | ');
    if (schema.enum) return schema.enum.map((v) => JSON.stringify(v).replaceAll('"', "'")).join(' | ');
    if (schema.const !== undefined) return JSON.stringify(schema.const).replaceAll('"', "'");
    switch (schema.type) {
      case 'string':
        return 'string';
      case 'integer':
      case 'number':
        return 'number';
      case 'boolean':
        return 'boolean';
      case 'array':
        return schema.items ? `${wrap(this.#ref(schema.items, indent))}[]` : 'unknown[]';
      case 'object':
      case undefined:
        return this.#object(schema, indent);
    }
  }

  #object(schema: JsonSchema, indent: string): string {
    const open = schema['x-kubernetes-preserve-unknown-fields'] === true;
    const props = Object.entries(schema.properties ?? {});
    const extra = schema.additionalProperties;
    if (props.length === 0) {
      if (typeof extra === 'object') return `Record<string, ${this.#ref(extra, indent)}>`;
      return 'Record<string, unknown>';
    }
    const inner = `${indent}  `;
    const required = new Set(schema.required ?? []);
    const lines = props.map(([name, sub]) => {
      const key = /^[A-Za-z_$][\w$]*$/.test(name) ? name : `'${name}'`;
      const optional = required.has(name) ? '' : '?';
      return `${doc(sub.description, inner)}${inner}${key}${optional}: ${this.#ref(sub, inner)};\n`;
    });
    if (open) lines.push(`${inner}/** Fields the schema leaves open. */\n${inner}[key: string]: unknown;\n`);
    return `{\n${lines.join('')}${indent}}`;
  }
}

function wrap(type: string): string {
  return type.includes('|') ? `(${type})` : type;
}

function doc(text: string | undefined, indent: string): string {
  if (!text) return '';
  return `${indent}/** ${text.replaceAll('*/', '*\\/')} */\n`;
}

function stripComments(text: string): string {
  return text.replace(/^\s*\/\*\*.*\*\/\n/gm, '');
}
