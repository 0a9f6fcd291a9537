// `AgentLS: Show MCP Servers`: the server's command turned into `agentls mcp`, and the
// listing it prints (pure: no vscode import, so node:test covers it).

/** The arguments of `agentls mcp` from the server's: `serve` (last) becomes `mcp`. */
export function mcpArgs(serveArgs: string[]): string[] {
  const args = [...serveArgs];
  if (args[args.length - 1] === "serve") args.pop();
  return [...args, "mcp"];
}

/** What the output channel shows: the listing, or why there is none. */
export function mcpReport(code: number | null, stdout: string, stderr: string): string {
  const listing = stdout.trim();
  const said = stderr.trim();
  if (listing) return said ? `${listing}\n${said}` : listing;
  if (code === 0) return said || "no MCP server is configured";
  return `agentls mcp failed (exit ${code ?? "signal"})${said ? `: ${said}` : ""}`;
}
