// Starting the AgentLS language server: which command, with which environment, and the
// LanguageClient around it (settings pulled through workspace/configuration).
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import {
  CloseAction, ErrorAction, type ErrorHandler, LanguageClient, type LanguageClientOptions,
  type ServerOptions, State,
} from "vscode-languageclient/node";
import { provideInlineCompletionItems } from "./completion";
import { readSettings, serverEnv, toServerConfig } from "./pure/config";
import { explainInPanel } from "./pure/explain";
import { mcpArgs, mcpReport } from "./pure/mcp";
import { PYTHON_SERVE_ARGS } from "./pure/python_start";
import { MAX_RESTARTS, onServerStop } from "./pure/restarts";

export interface ServerCommand {
  command: string;
  args: string[];
  how: string; // for messages: where the command came from
}

function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      if (fs.statSync(candidate).isFile()) return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** `agentls.server.command`, else `agentls serve` from PATH, else `<python> -P -m agentls serve`
 * (`-P`: no workspace file is imported in its place; pure/python_start.ts). */
export function serverCommand(config: vscode.WorkspaceConfiguration): ServerCommand {
  const configured = config.get<string[]>("server.command", []).filter((s) => s.trim());
  if (configured.length > 0) {
    return { command: configured[0], args: configured.slice(1),
             how: "the setting agentls.server.command" };
  }
  const agentls = onPath("agentls");
  if (agentls) return { command: agentls, args: ["serve"], how: "`agentls` on PATH" };
  const python = config.get<string>("server.python", "python3") || "python3";
  return { command: python, args: [...PYTHON_SERVE_ARGS],
           how: `the setting agentls.server.python (${python})` };
}

export function serverConfig(hasKey: boolean): Record<string, unknown> {
  const config = vscode.workspace.getConfiguration("agentls");
  return toServerConfig(readSettings((key, fallback) => config.get(key, fallback)), hasKey);
}

/** Restarts a running server that stopped unasked, later each time (pure/restarts.ts); after
 * too many stops close together it stays stopped, the person is told, and `gaveUp` runs. A
 * server that stops before it ever ran is left to the caller of `start()`, which tries again
 * itself (extension.ts). */
function restartPolicy(output: vscode.OutputChannel, ran: () => boolean,
                       gaveUp: () => void): ErrorHandler {
  const stops: number[] = [];
  return {
    // vscode-languageclient's own rule: a few unreadable messages are let go, then it stops.
    error: (_error, _message, count) =>
      ({ action: count !== undefined && count <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown }),
    closed: async () => {
      if (!ran()) return { action: CloseAction.DoNotRestart, handled: true };
      const decision = onServerStop(stops, Date.now());
      if (!decision.restart) {
        gaveUp();
        return { action: CloseAction.DoNotRestart, message:
          `The AgentLS server stopped ${decision.stops} times within 3 minutes and is not ` +
          "restarted again. “AgentLS: Show Log” says why; “AgentLS: Restart Server” starts it." };
      }
      output.appendLine(`The AgentLS server stopped; restarting it in ${decision.delayMs / 1000} s ` +
                        `(attempt ${decision.attempt} of ${MAX_RESTARTS}).`);
      await new Promise((resolve) => setTimeout(resolve, decision.delayMs));
      return { action: CloseAction.Restart, handled: true };
    },
  };
}

/** The language client, with two messages of its own adjusted. A failed start is told once,
 * by the extension: its retry line in the log, or its "could not start" message with what to
 * do; the client's own notification would come on top. */
class AgentLanguageClient extends LanguageClient {
  private stopAsked = false;

  // A restart or reload stops the server on purpose: its exit is not an error.
  override stop(timeout?: number): Promise<void> {
    this.stopAsked = true;
    return super.stop(timeout);
  }

  // vscode-languageclient 9 passes "show a notification" as the data of its "Server will
  // restart" line, which then printed a bare "true"/"false" line in the log.
  override info(message: string, data?: unknown, showNotification = true): void {
    if (typeof data === "boolean") super.info(message, undefined, data);
    else super.info(message, data, showNotification);
  }

  override error(message: string, data?: unknown, showNotification: boolean | "force" = true): void {
    if (this.stopAsked && message === "Server process exited with code 0.") {
      super.info("The server stopped as asked (exit code 0).", undefined, false);
      return;
    }
    const quiet = message.endsWith("couldn't create connection to server.");
    super.error(message, data, quiet ? false : showNotification);
  }
}

export function createClient(command: ServerCommand, apiKey: string | undefined,
                             output: vscode.OutputChannel, gaveUp: () => void): LanguageClient {
  const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  let ran = false; // the server answered initialize at least once
  // No `transport`: the languageclient would add --stdio, and `agentls serve` speaks stdio
  // by default.
  const serverOptions: ServerOptions = {
    command: command.command,
    args: command.args,
    options: { cwd, env: serverEnv(process.env, apiKey) },
  };
  const hasKey = Boolean(apiKey);
  const clientOptions: LanguageClientOptions = {
    documentSelector: [{ scheme: "file" }, { scheme: "untitled" }],
    outputChannel: output,
    // The extension runs only in trusted workspaces (package.json: untrustedWorkspaces), so
    // the project's .agentls/config.toml may change safety settings (docs/SECURITY.md).
    initializationOptions: { ...serverConfig(hasKey), workspaceTrusted: vscode.workspace.isTrusted },
    // The server reports its own start-up problems; one notification from us is enough.
    initializationFailedHandler: () => false,
    errorHandler: restartPolicy(output, () => ran, gaveUp),
    middleware: {
      provideInlineCompletionItems, // completion.ts: nothing is asked while toggled off
      // "Explain" is answered in the chat panel rather than in a Markdown file.
      provideCodeActions: async (document, range, context, token, next) =>
        explainInPanel(await next(document, range, context, token)),
      workspace: {
        configuration: async (params, token, next) => {
          const values = await next(params, token);
          if (!Array.isArray(values)) return values;
          return params.items.map((item, i) =>
            item.section === "agentls" ? serverConfig(hasKey) : values[i]);
        },
      },
    },
  };
  const client = new AgentLanguageClient("agentls", "AgentLS", serverOptions, clientOptions);
  client.onDidChangeState((change) => { if (change.newState === State.Running) ran = true; });
  return client;
}

/** `AgentLS: Show MCP Servers`: `agentls mcp` in the workspace (each enabled server started as
 * a run would start it: its state, how it runs, its tools) in the output channel. */
export async function showMcpServers(output: vscode.OutputChannel): Promise<void> {
  const command = serverCommand(vscode.workspace.getConfiguration("agentls"));
  const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  output.show(true);
  output.appendLine("MCP servers (`agentls mcp`; each enabled one is started to list its tools):");
  const report = await new Promise<string>((resolve) => {
    execFile(command.command, mcpArgs(command.args), { cwd, timeout: 120_000, maxBuffer: 4 << 20 },
             (error, stdout, stderr) => {
               const code = error === null ? 0 : typeof error.code === "number" ? error.code : null;
               resolve(mcpReport(code, stdout, code === null && error ? error.message : stderr));
             });
  });
  output.appendLine(report);
}
