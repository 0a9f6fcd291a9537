// The server's "AgentLS: Explain" code action runs `agentls.runAction`, which writes the
// explanation to a Markdown file; in VS Code it runs "AgentLS: Explain in Chat" with the same
// target, so the answer comes in the chat panel (pure: no vscode import, so node:test covers it).

export const EXPLAIN_IN_CHAT = "agentls.ui.explain";

interface CommandLike {
  command: string;
  arguments?: unknown[];
}

/** Code actions (or bare commands) as the language client returns them, Explain re-routed. */
export function explainInPanel<T extends CommandLike | { command?: CommandLike }>(
    actions: T[] | null | undefined): T[] | null | undefined {
  for (const action of actions ?? []) {
    const command = typeof action.command === "string" ? action as CommandLike
      : (action as { command?: CommandLike }).command;
    const target = command?.arguments?.[0] as { action?: unknown } | undefined;
    if (command?.command === "agentls.runAction" && target?.action === "explain") {
      command.command = EXPLAIN_IN_CHAT;
    }
  }
  return actions;
}
