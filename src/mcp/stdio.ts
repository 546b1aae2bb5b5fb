/** Placeholder entry until the MCP server lands; see the MCP issue. */
export async function runMcpStdio(_env: NodeJS.ProcessEnv, io: { err: (s: string) => void }): Promise<number> {
  io.err('svc: mcp-stdio is not available in this build yet.');
  return 1;
}
