// The status bar item: idle, running (click: cancel) or error (click: show the log).
import * as vscode from "vscode";

export type Status = "starting" | "idle" | "running" | "error";

export class StatusItem implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 100);

  constructor() {
    this.item.name = "AgentLS";
    this.set("starting");
    this.item.show();
  }

  set(status: Status, detail = ""): void {
    const item = this.item;
    item.backgroundColor = undefined;
    if (status === "starting") {
      item.text = "$(loading~spin) AgentLS";
      item.tooltip = "AgentLS: starting the language server";
      item.command = "agentls.ui.showLog";
    } else if (status === "idle") {
      item.text = "$(comment-discussion) AgentLS";
      item.tooltip = "AgentLS: idle. Click to chat.";
      item.command = "agentls.ui.chat";
    } else if (status === "running") {
      item.text = "$(sync~spin) AgentLS: running";
      item.tooltip = `AgentLS: ${detail || "the agent is working"}. Click to cancel.`;
      item.command = "agentls.ui.cancel";
    } else {
      item.text = "$(error) AgentLS";
      item.tooltip = `AgentLS: ${detail || "error"}. Click to show the log.`;
      item.command = "agentls.ui.showLog";
      item.backgroundColor = new vscode.ThemeColor("statusBarItem.errorBackground");
    }
  }

  dispose(): void {
    this.item.dispose();
  }
}
