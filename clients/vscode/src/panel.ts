// The chat panel: a webview view with a strict Content-Security-Policy (one nonce'd script,
// styles from the extension, nothing remote).
import * as crypto from "node:crypto";
import * as vscode from "vscode";
import type { ViewModel } from "./pure/view";

export type PanelMessage =
  | { type: "ready" }
  | { type: "send"; prompt: string }
  | { type: "cancel" }
  | { type: "copy"; text: string }
  | { type: "firstText"; turn: number };

export class ChatPanel implements vscode.WebviewViewProvider {
  static readonly viewId = "agentls.chat";
  private view?: vscode.WebviewView;
  private latest?: ViewModel;
  private reset = false;

  constructor(private readonly extensionUri: vscode.Uri,
              private readonly onMessage: (message: PanelMessage) => void) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    const media = vscode.Uri.joinPath(this.extensionUri, "media");
    view.webview.options = { enableScripts: true, localResourceRoots: [media] };
    view.webview.html = this.html(view.webview, media);
    view.webview.onDidReceiveMessage((m: PanelMessage) => {
      if (m.type === "ready") this.post(true);
      this.onMessage(m);
    });
    view.onDidDispose(() => { this.view = undefined; });
  }

  get visible(): boolean {
    return this.view?.visible ?? false;
  }

  async reveal(): Promise<void> {
    if (this.view) this.view.show(true);
    else await vscode.commands.executeCommand(`${ChatPanel.viewId}.focus`);
  }

  show(model: ViewModel, reset = false): void {
    this.latest = model;
    this.reset ||= reset;
    this.post(false);
  }

  focusInput(): void {
    void this.view?.webview.postMessage({ type: "focusInput" });
  }

  private post(reset: boolean): void {
    if (!this.view || !this.latest) return;
    void this.view.webview.postMessage({ type: "view", view: this.latest,
                                         reset: reset || this.reset });
    this.reset = false;
  }

  private html(webview: vscode.Webview, media: vscode.Uri): string {
    const nonce = crypto.randomBytes(16).toString("base64");
    const script = webview.asWebviewUri(vscode.Uri.joinPath(media, "panel.js"));
    const style = webview.asWebviewUri(vscode.Uri.joinPath(media, "panel.css"));
    const csp = [
      "default-src 'none'",
      `style-src ${webview.cspSource}`,
      `img-src ${webview.cspSource}`,
      `font-src ${webview.cspSource}`,
      `script-src 'nonce-${nonce}'`,
    ].join("; ");
    return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${style}">
<title>AgentLS Chat</title>
</head>
<body>
<div id="root">
  <div id="log" role="log" aria-live="polite"></div>
  <div id="empty">Ask the agent about this workspace. Every edit it proposes opens in the
  refactor preview, where you apply or discard it.</div>
  <form id="ask">
    <textarea id="prompt" rows="3" placeholder="Ask AgentLS… (Enter to send, Shift+Enter for a new line)" aria-label="Message to AgentLS"></textarea>
    <div class="buttons">
      <button id="cancel" class="secondary" type="button" hidden>Cancel</button>
      <button id="send" type="submit">Send</button>
    </div>
  </form>
</div>
<script nonce="${nonce}" src="${script}"></script>
</body>
</html>`;
  }
}
