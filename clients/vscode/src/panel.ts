// The chat panel: a webview view with a strict Content-Security-Policy (one nonce'd script,
// styles from the extension, nothing remote). The script is src/panel/ bundled into
// dist/panel.js; the styles are media/panel.css.
import * as crypto from "node:crypto";
import * as vscode from "vscode";
import type { PanelOp, ViewModel } from "./pure/view";

export type PanelMessage =
  | { type: "ready" }
  | { type: "send"; prompt: string; references?: Record<string, unknown>[] }
  | { type: "mentions"; id: number; trigger: string; query: string }
  | { type: "chooseModel" }
  | { type: "setMode"; mode: string }
  | { type: "cancel" }
  | { type: "earlier" }
  | { type: "command"; command: string }
  | { type: "code"; action: "copy" | "insert" | "apply"; code: string; lang: string }
  | { type: "firstText"; turn: number }
  | { type: "chunkTimes"; turn: number; ms: number[] }
  | { type: "drawn"; ms: number };

export class ChatPanel implements vscode.WebviewViewProvider {
  static readonly viewId = "agentls.chat";
  private view?: vscode.WebviewView;
  private ready = false;

  /** `onMessage` gets the webview's messages; on "ready" the owner sends the whole view. */
  constructor(private readonly extensionUri: vscode.Uri,
              private readonly onMessage: (message: PanelMessage) => void) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    this.ready = false;
    const media = vscode.Uri.joinPath(this.extensionUri, "media");
    const dist = vscode.Uri.joinPath(this.extensionUri, "dist");
    view.webview.options = { enableScripts: true, localResourceRoots: [media, dist] };
    view.webview.html = this.html(view.webview, media, dist);
    view.webview.onDidReceiveMessage((m: PanelMessage) => {
      if (m.type === "ready") {
        this.ready = true;
        void view.webview.postMessage({ type: "options", options: this.lastOptions });
      }
      this.onMessage(m);
    });
    view.onDidDispose(() => { this.view = undefined; this.ready = false; });
  }

  get visible(): boolean {
    return this.view?.visible ?? false;
  }

  async reveal(): Promise<void> {
    if (this.view) this.view.show(true);
    else await vscode.commands.executeCommand(`${ChatPanel.viewId}.focus`);
  }

  /** The whole view (the webview redraws everything). */
  show(model: ViewModel, reset: boolean, timings: boolean): void {
    if (!this.view || !this.ready) return; // drawn whole when the webview says it is ready
    void this.view.webview.postMessage({ type: "view", view: model, reset, timings });
  }

  /** Changes to what the webview shows (src/pure/view.ts); dropped until it is ready, as
   * it then gets the whole view. */
  apply(ops: PanelOp[]): void {
    if (!this.view || !this.ready) return;
    void this.view.webview.postMessage({ type: "ops", ops });
  }

  focusInput(): void {
    void this.view?.webview.postMessage({ type: "focusInput" });
  }

  /** Completion items for a mention being typed (answer to a "mentions" message). */
  mentionItems(id: number, items: unknown[]): void {
    void this.view?.webview.postMessage({ type: "mentionItems", id, items });
  }

  /** The header: the session's model and mode, and the modes to choose from. */
  options(options: { model: string; backend: string; mode: string;
                     modes: { name: string; label: string; description: string }[] } | null): void {
    this.lastOptions = options;
    if (this.ready) void this.view?.webview.postMessage({ type: "options", options });
  }

  private lastOptions: unknown = null;

  setInput(text: string): void {
    void this.view?.webview.postMessage({ type: "setInput", text });
  }

  private html(webview: vscode.Webview, media: vscode.Uri, dist: vscode.Uri): string {
    const nonce = crypto.randomBytes(16).toString("base64");
    const script = webview.asWebviewUri(vscode.Uri.joinPath(dist, "panel.js"));
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
  <div id="header" hidden>
    <button id="model" type="button" class="header-button" title="Choose the model for this chat"></button>
    <label class="mode-label">Mode
      <select id="mode" title="What the agent may do in this chat"></select>
    </label>
  </div>
  <div id="log" role="log" aria-live="polite"></div>
  <div id="empty">
    <p>Ask the agent about this workspace; every edit it proposes opens for your review before anything changes.</p>
    <div class="empty-actions">
      <button type="button" data-command="agentls.ui.setApiKey">Set API key</button>
      <button type="button" class="secondary" data-command="agentls.ui.chooseBackend">Choose backend</button>
    </div>
  </div>
  <form id="ask">
    <div id="mentions" role="listbox" aria-label="Mentions" hidden></div>
    <textarea id="prompt" rows="3" placeholder="Ask AgentLS… (@ or # to attach a file, the selection… · Enter to send)" aria-label="Message to AgentLS" aria-autocomplete="list"></textarea>
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
