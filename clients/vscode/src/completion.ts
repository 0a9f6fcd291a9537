// Completions as you type: VS Code's inline suggestions (ghost text) from the server's
// textDocument/inlineCompletion, through vscode-languageclient's InlineCompletionItemFeature
// (a proposed feature in 9.x, registered in `attach`), a status bar item that shows the
// server's agentls/completionStatus and toggles `agentls.completion.enabled`. Accepting is
// VS Code's own: Tab (all), Ctrl+Right (next word), Alt+L (next line, package.json), Esc.
import * as vscode from "vscode";
import type { LanguageClient, Middleware } from "vscode-languageclient/node";

export type CompletionStatus = "idle" | "waiting" | "off" | "error";

interface StatusParams {
  status: CompletionStatus;
  message?: string;
}

function enabled(): boolean {
  return vscode.workspace.getConfiguration("agentls").get<boolean>("completion.enabled", true);
}

/** The client's middleware: with completions toggled off, VS Code asks the server nothing. */
export const provideInlineCompletionItems: Middleware["provideInlineCompletionItems"] =
  (document, position, context, token, next) =>
    enabled() ? next(document, position, context, token) : undefined;

export class CompletionStatusItem implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 99);
  private status: CompletionStatus = "off";
  private message = "";
  private readonly watch: vscode.Disposable;

  constructor() {
    this.item.name = "AgentLS completions";
    this.item.command = "agentls.ui.toggleCompletion";
    this.watch = vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration("agentls.completion.enabled")) this.render();
    });
    this.render();
    this.item.show();
  }

  /** Before the client starts: the inline completion feature and the status notification. */
  attach(client: LanguageClient): void {
    client.registerProposedFeatures();
    client.onNotification("agentls/completionStatus", (params: StatusParams) => {
      this.status = params.status;
      this.message = params.message ?? "";
      this.render();
    });
  }

  async toggle(): Promise<void> {
    // Global: a toggle is the person's, not the project's; the server hears it as
    // completion.enabled and says "off" back.
    await vscode.workspace.getConfiguration("agentls").update("completion.enabled", !enabled(),
                                                               vscode.ConfigurationTarget.Global);
    this.render();
  }

  private render(): void {
    const item = this.item;
    item.backgroundColor = undefined;
    if (!enabled()) {
      item.text = "$(circle-slash) Completions";
      item.tooltip = "AgentLS completions are off. Click to turn them on.";
    } else if (this.status === "off") {
      item.text = "$(circle-slash) Completions";
      item.tooltip = "AgentLS completions: no completion model is set (completion.model in " +
        "agentls.completion.model or .agentls/config.toml). Click to turn them off.";
    } else if (this.status === "error") {
      item.text = "$(warning) Completions";
      item.tooltip = `AgentLS completions: ${this.message || "the model did not answer"}. ` +
        "Click to turn them off.";
      item.backgroundColor = new vscode.ThemeColor("statusBarItem.warningBackground");
    } else if (this.status === "waiting") {
      item.text = "$(loading~spin) Completions";
      item.tooltip = "AgentLS completions: waiting for the model. Click to turn them off.";
    } else {
      item.text = "$(sparkle) Completions";
      item.tooltip = "AgentLS completions as you type are on. Click to turn them off.";
    }
  }

  dispose(): void {
    this.watch.dispose();
    this.item.dispose();
  }
}
