/**
 * Adds a route-level hook after the route's own (which run after every plugin-level hook, authentication
 * included). Safe to call twice for one route: Fastify builds the HEAD route of a GET from the same options.
 */
export function appendHook<H>(existing: H | H[] | undefined, hook: H): H[] {
  const list = existing === undefined ? [] : Array.isArray(existing) ? existing : [existing];
  return list.includes(hook) ? list : [...list, hook];
}
