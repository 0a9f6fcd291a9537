// The status bar item: idle, running (click: cancel) or error (click: show the log).
import * as vscode from "vscode";

export type Status = "starting" | "idle" | "running" | "error";

export class StatusItem implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 100);
  private last: [Status, string] = ["starting", ""];
  private session = ""; // "model · mode" of the chat in the panel
  private review = 0; // open reviews: while any is open, the item says so whatever the run says

  constructor() {
    this.item.name = "AgentLS";
    this.set("starting");
    this.item.show();
  }

  /** The chat's model and mode, shown while idle. */
  setSession(label: string): void {
    this.session = label;
    this.set(...this.last);
  }

  /** An agent edit waits for the person's review (on) or was decided (off). */
  reviewing(on: boolean): void {
    this.review = Math.max(0, this.review + (on ? 1 : -1));
    if (this.review > 0) {
      const item = this.item;
      item.backgroundColor = new vscode.ThemeColor("statusBarItem.warningBackground");
      item.text = "$(eye) AgentLS: waiting for your review";
      item.tooltip = "AgentLS: an edit of the agent waits for your review";
      item.command = undefined;
    } else {
      this.set(...this.last);
    }
  }

  /** What the editor's review has left to decide ("3 changes left in 2 files"); a click
   * lists the review's files. */
  reviewLeft(left: string): void {
    if (this.review === 0) return;
    this.item.text = `$(eye) AgentLS review: ${left}`;
    this.item.tooltip = "AgentLS: the review of the agent's edit. Click to list its files.";
    this.item.command = "agentls.review.list";
  }

  /** Whether an agent edit waits for the person's review now. */
  isReviewing(): boolean {
    return this.review > 0;
  }

  set(status: Status, detail = ""): void {
    this.last = [status, detail];
    if (this.review > 0) return;
    const item = this.item;
    item.backgroundColor = undefined;
    if (status === "starting") {
      item.text = "$(loading~spin) AgentLS";
      item.tooltip = "AgentLS: starting the language server";
      item.command = "agentls.ui.showLog";
    } else if (status === "idle") {
      item.text = "$(comment-discussion) AgentLS" + (this.session ? `: ${this.session}` : "");
      item.tooltip = `AgentLS: idle${this.session ? ` (${this.session})` : ""}. Click to chat.`;
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
