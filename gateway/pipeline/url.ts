/**
 * Request-target handling: split path and query, and remove `.` and `..` segments before routing
 * (RFC 3986 §5.2.4), so `/api/../admin` can't reach past a listen path.
 */

/** Path (dot segments removed) and query (with its `?`, or empty) of a request target. */
export function splitTarget(url: string): { path: string; query: string } {
  let target = url;
  if (!target.startsWith('/')) {
    // absolute-form (`http://host/path`): keep what follows the authority
    const m = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i.exec(target);
    if (m !== null) target = target.slice(m[0].length);
    if (!target.startsWith('/') && !target.startsWith('?')) return { path: target, query: '' };
    if (target.startsWith('?')) target = `/${target}`;
  }
  const q = target.indexOf('?');
  const rawPath = q === -1 ? target : target.slice(0, q);
  const query = q === -1 ? '' : target.slice(q);
  const dotty = rawPath.includes('/.') || rawPath.includes('%2e') || rawPath.includes('%2E');
  return { path: dotty ? removeDotSegments(rawPath) : rawPath, query };
}

/** RFC 3986 remove_dot_segments for an absolute path; also for `%2e` spelled dots. */
export function removeDotSegments(path: string): string {
  const out: string[] = [];
  const segments = path.split('/');
  for (let i = 1; i < segments.length; i++) {
    const seg = segments[i] ?? '';
    const s = seg.toLowerCase();
    const last = i === segments.length - 1;
    if (s === '.' || s === '%2e') {
      if (last) out.push('');
    } else if (s === '..' || s === '.%2e' || s === '%2e.' || s === '%2e%2e') {
      out.pop();
      if (last) out.push('');
    } else {
      out.push(seg);
    }
  }
  return `/${out.join('/')}`;
}
