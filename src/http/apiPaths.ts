/** The routes an API key authenticates: the public API (not its OpenAPI document) and MCP. */
export function usesApiKey(url: string | undefined): boolean {
  if (!url) return false;
  if (url.startsWith('/api/v1/')) return url !== '/api/v1/openapi.json';
  return url === '/mcp' || url.startsWith('/mcp/');
}

/** A request URL (query included) under the public API, its OpenAPI document excepted. */
export function isApiPath(url: string): boolean {
  const path = url.split('?')[0];
  return path === '/api/v1' || (path.startsWith('/api/v1/') && usesApiKey(path));
}
