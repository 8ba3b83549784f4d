/** The WHERE clauses of the analytics queries. */

/**
 * A WHERE clause of `conditions` (each a clause with one `?` and its value) joined by AND, with
 * their parameters in order; a condition whose value is undefined (a filter not asked for) is
 * left out.
 */
export function whereOf(conditions: readonly (readonly [clause: string, value: unknown])[]): {
  where: string;
  params: unknown[];
} {
  const given = conditions.filter(([, value]) => value !== undefined);
  return { where: given.map(([clause]) => clause).join(' AND '), params: given.map(([, value]) => value) };
}
