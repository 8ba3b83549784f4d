/**
 * One HTTPRoute against one Gateway: each of its parentRefs naming the Gateway gets its parent
 * status (Accepted, ResolvedRefs), and each match of a route it accepts becomes a candidate,
 * where it is served: a listener port, a host and a path. Part of translate.ts (the whole).
 */
import { resolveBackend, type BackendProblem, type ResolvedBackend } from './backends.ts';
import { ruleBehaviour, type Unsupported } from './filters.ts';
import { intersectHostnames, namesGateway, namespaceAllowed, type ServedListener } from './listeners.ts';
import {
  GATEWAY_GROUP,
  type Condition,
  type GatewayInput,
  type GatewayTranslationContext,
  type HttpRouteInput,
  type RouteMatch,
  type RouteParentStatus,
  type RouteRule,
} from './types.ts';

/** One match of one rule, where it is served: a listener port, a host and a path. */
export interface Candidate {
  route: HttpRouteInput;
  routeKey: string;
  ruleIndex: number;
  matchIndex: number;
  rule: RouteRule;
  match: RouteMatch;
  listener: ServedListener;
  domain: string;
  /** The listen path (`/` for every path; no trailing slash otherwise). */
  path: string;
  exact: boolean;
  /** A RegularExpression path match: the whole request path must match it (under `path`). */
  regex: string | undefined;
  backends: (ResolvedBackend | BackendProblem)[];
}

export const cond = (type: string, status: boolean, reason: string, message: string): Condition => ({
  type,
  status: status ? 'True' : 'False',
  reason,
  message,
});

const creation = (r: HttpRouteInput): number => {
  const t = r.metadata.creationTimestamp;
  return t === undefined ? 0 : new Date(t).getTime();
};

/** Routes in the spec's order of precedence for ties: oldest first, then by namespace and name. */
export function byAge(a: HttpRouteInput, b: HttpRouteInput): number {
  const ka = `${a.metadata.namespace}/${a.metadata.name}`;
  const kb = `${b.metadata.namespace}/${b.metadata.name}`;
  return creation(a) - creation(b) || (ka < kb ? -1 : ka > kb ? 1 : 0);
}

/**
 * The listen path a regular expression's matches all lie under: its literal start (letters,
 * digits, `/`, `-`, `_`, `~`, `%`; a character a quantifier makes optional left out) cut back to
 * its last `/`, as a prefix covers whole segments; `/` when it has an alternative (`|`) or does
 * not start with a literal `/`.
 */
export function regexListenPath(regex: string): string {
  const body = regex.replace(/^\^/, '');
  if (body.includes('|')) return '/';
  let literal = /^[A-Za-z0-9/_~%-]*/.exec(body)?.[0] ?? '';
  if (/^[?*{]/.test(body.slice(literal.length))) literal = literal.slice(0, -1);
  const cut = literal.slice(0, literal.lastIndexOf('/'));
  return cut.startsWith('/') ? cut : '/';
}

/** The path match of a match, or the problem with it. */
function pathOf(
  match: RouteMatch,
  at: string,
): { path: string; exact: boolean; regex?: string } | Unsupported {
  const type = match.path?.type ?? 'PathPrefix';
  const value = match.path?.value ?? '/';
  if (type === 'RegularExpression') {
    try {
      new RegExp(value);
    } catch {
      return { message: `${at}.path.value: Invalid value: "${value}": not a regular expression` };
    }
    return { path: regexListenPath(value), exact: false, regex: value };
  }
  if (!value.startsWith('/') || /[?#]|\/\/|\/\.\.?(\/|$)/.test(value)) {
    return {
      message: `${at}.path.value: Invalid value: "${value}": an absolute path without query, "//", "." or ".." segments`,
    };
  }
  if (type === 'Exact') return { path: value, exact: true };
  const trimmed = value.replace(/\/+$/, '');
  return { path: trimmed === '' ? '/' : trimmed, exact: false };
}

/** Where an accepted route is served, and the listeners it is attached to but not served on. */
function acceptedMessage(listeners: readonly ServedListener[]): string {
  const names = (list: readonly ServedListener[]): string =>
    `listener${list.length > 1 ? 's' : ''} ${list.map((l) => l.listener.name).join(', ')}`;
  const served = listeners.filter((l) => l.usable);
  const idle = listeners.filter((l) => !l.usable);
  return [
    ...(served.length > 0 ? [`served on ${names(served)}`] : []),
    ...(idle.length > 0 ? [`attached to ${names(idle)}, not served: its certificates do not resolve`] : []),
  ].join('; ');
}

/** What one route gets from this Gateway: its parent statuses, its candidates, the listeners it attached to. */
export interface RouteAttachment {
  parents: RouteParentStatus[];
  candidates: Candidate[];
  /** The names of the listeners the route is attached to (once per parentRef that attached it). */
  attachedTo: string[];
}

/** A route's parentRefs naming `gateway`, checked against its listeners: see RouteAttachment. */
export function attachRoute(
  route: HttpRouteInput,
  gateway: GatewayInput,
  listeners: readonly ServedListener[],
  ctx: GatewayTranslationContext,
): RouteAttachment {
  const gwNs = gateway.metadata.namespace;
  const routeKey = `${route.metadata.namespace}/${route.metadata.name}`;
  const parents: RouteParentStatus[] = [];
  const candidates: Candidate[] = [];
  const attachedTo: string[] = [];
  // The backends (and mirrors) of each rule: ResolvedRefs says what they resolve to on every
  // parent, accepted or not.
  const backendsOf = new Map<number, (ResolvedBackend | BackendProblem)[]>();
  const mirrorProblems: BackendProblem[] = [];
  (route.spec.rules ?? []).forEach((rule, r) => {
    const at = `spec.rules[${r}]`;
    backendsOf.set(
      r,
      (rule.backendRefs ?? []).map((b, i) =>
        resolveBackend(b, route.metadata.namespace, `${at}.backendRefs[${i}]`, ctx),
      ),
    );
    (rule.filters ?? []).forEach((f, i) => {
      if (f.type !== 'RequestMirror' || f.requestMirror === undefined) return;
      const m = resolveBackend(
        f.requestMirror.backendRef,
        route.metadata.namespace,
        `${at}.filters[${i}].requestMirror.backendRef`,
        ctx,
      );
      if ('reason' in m) mirrorProblems.push(m);
    });
  });
  const backendProblems = [
    ...[...backendsOf.values()].flat().filter((b): b is BackendProblem => 'reason' in b),
    ...mirrorProblems,
  ];
  const firstProblem = backendProblems[0];
  const resolved =
    firstProblem === undefined
      ? cond('ResolvedRefs', true, 'ResolvedRefs', 'every backend is resolved')
      : cond('ResolvedRefs', false, firstProblem.reason, backendProblems.map((b) => b.message).join('; '));
  (route.spec.parentRefs ?? []).forEach((ref) => {
    if (!namesGateway(ref, route, gateway)) return;
    // As written (the group and kind as the API server defaults them): clients compare it with theirs.
    const parentRef = { group: GATEWAY_GROUP, kind: 'Gateway', ...ref };
    const named = listeners.filter(
      (l) =>
        (ref.sectionName === undefined || ref.sectionName === l.listener.name) &&
        (ref.port === undefined || ref.port === l.listener.port),
    );
    const refuse = (reason: string, message: string): void => {
      parents.push({ parentRef, conditions: [cond('Accepted', false, reason, message), resolved] });
    };
    if (named.length === 0) {
      refuse(
        'NoMatchingParent',
        ref.sectionName !== undefined
          ? `the Gateway has no listener named "${ref.sectionName}"${ref.port === undefined ? '' : ` on port ${ref.port}`}`
          : `the Gateway has no listener on port ${ref.port ?? ''}`,
      );
      return;
    }
    const allowed = named.filter(
      (l) => l.attachable && namespaceAllowed(l.listener, gwNs, route.metadata.namespace, ctx),
    );
    if (allowed.length === 0) {
      refuse(
        'NotAllowedByListeners',
        'no listener of the Gateway lets this route attach (allowedRoutes, protocol, conflicted or invalid)',
      );
      return;
    }
    const hosted = allowed.flatMap((l) => {
      const hosts = intersectHostnames(l.listener.hostname, route.spec.hostnames ?? []);
      return hosts === undefined ? [] : [{ l, hosts }];
    });
    if (hosted.length === 0) {
      refuse('NoMatchingListenerHostname', "none of the route's hostnames is one of the listeners'");
      return;
    }
    // What the rules ask, on every listener and host they are served on.
    const unsupported: Unsupported[] = [];
    const mine: Candidate[] = [];
    (route.spec.rules ?? []).forEach((rule, r) => {
      const at = `spec.rules[${r}]`;
      const matches = rule.matches === undefined || rule.matches.length === 0 ? [{}] : rule.matches;
      matches.forEach((match: RouteMatch, m) => {
        const mAt = `${at}.matches[${m}]`;
        const p = pathOf(match, mAt);
        if ('message' in p) {
          unsupported.push(p);
          return;
        }
        for (const [field, list] of [
          ['headers', match.headers],
          ['queryParams', match.queryParams],
        ] as const) {
          (list ?? []).forEach((v, i) => {
            if (v.type === 'RegularExpression') {
              try {
                new RegExp(v.value);
              } catch {
                unsupported.push({
                  message: `${mAt}.${field}[${i}].value: Invalid value: not a regular expression`,
                });
              }
            }
          });
        }
        // Served on the listeners that can serve (one whose certificate does not resolve counts
        // the route as attached but serves nothing).
        for (const { l, hosts } of hosted) {
          if (!l.usable) continue;
          for (const domain of hosts) {
            const scope = {
              scheme: l.scheme,
              port: l.listener.port,
              host: domain === '' || domain.startsWith('*.') ? undefined : domain,
              path: { exact: p.exact, value: p.path },
            };
            // Checked here for what it says; built again per API below.
            ruleBehaviour(rule, at, scope, unsupported);
            mine.push({
              route,
              routeKey,
              ruleIndex: r,
              matchIndex: m,
              rule,
              match,
              listener: l,
              domain,
              path: p.path,
              exact: p.exact,
              regex: p.regex,
              backends: [],
            });
          }
        }
      });
    });
    const problems = [...new Set(unsupported.map((u) => u.message))];
    if (problems.length > 0) {
      refuse('UnsupportedValue', problems.join('; '));
      return;
    }
    for (const c of mine) c.backends = backendsOf.get(c.ruleIndex) ?? [];
    candidates.push(...mine);
    for (const { l } of hosted) attachedTo.push(l.listener.name);
    parents.push({
      parentRef,
      conditions: [cond('Accepted', true, 'Accepted', acceptedMessage(hosted.map((h) => h.l))), resolved],
    });
  });
  return { parents, candidates, attachedTo };
}
