// Starting the AgentLS language server: which command, with which environment, and the
// LanguageClient around it (settings pulled through workspace/configuration).
import * as fs from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import {
  LanguageClient, type LanguageClientOptions, type ServerOptions,
} from "vscode-languageclient/node";
import { readSettings, serverEnv, toServerConfig } from "./pure/config";

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

/** `agentls.server.command`, else `agentls serve` from PATH, else `<python> -m agentls serve`. */
export function serverCommand(config: vscode.WorkspaceConfiguration): ServerCommand {
  const configured = config.get<string[]>("server.command", []).filter((s) => s.trim());
  if (configured.length > 0) {
    return { command: configured[0], args: configured.slice(1),
             how: "the setting agentls.server.command" };
  }
  const agentls = onPath("agentls");
  if (agentls) return { command: agentls, args: ["serve"], how: "`agentls` on PATH" };
  const python = config.get<string>("server.python", "python3") || "python3";
  return { command: python, args: ["-m", "agentls", "serve"],
           how: `the setting agentls.server.python (${python})` };
}

export function serverConfig(hasKey: boolean): Record<string, unknown> {
  const config = vscode.workspace.getConfiguration("agentls");
  return toServerConfig(readSettings((key, fallback) => config.get(key, fallback)), hasKey);
}

export function createClient(command: ServerCommand, apiKey: string | undefined,
                             output: vscode.OutputChannel): LanguageClient {
  const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
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
    connectionOptions: { maxRestartCount: 2 },
    middleware: {
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
  return new LanguageClient("agentls", "AgentLS", serverOptions, clientOptions);
}
