/**
 * The rows of a batched statement's input arrays, for its FROM: the same rows as `unnest(first, rest…)`, the first
 * through `svc_rows` (migration 0020), which the planner counts at 10 rows whatever the batch holds. So a named
 * statement keeps its generic plan instead of being planned anew for every batch (a batch of one looked far cheaper
 * planned for itself): planning was most of what PostgreSQL spent on a request's statements.
 */
export function batchRows(arrays: string[]): string {
  const [first, ...rest] = arrays;
  return `ROWS FROM (svc_rows(${first})${rest.map((a) => `, unnest(${a})`).join('')})`;
}
