// Next-edit suggestions: after a change, the server's agentls/nextEdit (the same as
// textDocument/copilotInlineEdit) is asked at the cursor, and the edit it predicts is drawn
// where it goes with decorations: the text it replaces struck out, the new text after it.
// While one is shown the context key `agentls.nextEditShown` is set, so Tab accepts it
// (when no inline suggestion or suggest widget is up: one suggestion at a time) and Escape
// dismisses it (package.json keybindings). Off screen, a hint at the cursor says where and
// the first Tab jumps there. Accepting applies the edit, runs its command and asks for the
// next; dismissing runs agentls.nextEdit.reject. A status bar item shows the server's
// agentls/nextEditStatus and toggles `agentls.nextEdit.enabled`.
import * as vscode from "vscode";
import { ExecuteCommandRequest, type LanguageClient } from "vscode-languageclient/node";
import {
  drawnOf, endAfter, firstEdit, hintOf, type NextEditStatus, onScreen, statusLabel,
  suggestionId, type WireEdit,
} from "./pure/nextEdit";

const CONTEXT_KEY = "agentls.nextEditShown";
const DELAY_MS = 100; // after the last change; the server waits next_edit.debounce_ms more

interface Shown {
  editor: vscode.TextEditor;
  edit: WireEdit;
  range: vscode.Range;
  version: number;
  away: boolean; // off screen: the first accept jumps to it
  client: LanguageClient;
}

function enabled(): boolean {
  return vscode.workspace.getConfiguration("agentls").get<boolean>("nextEdit.enabled", true);
}

export class NextEdits implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Right, 98);
  private readonly strike = vscode.window.createTextEditorDecorationType({
    backgroundColor: new vscode.ThemeColor("diffEditor.removedTextBackground"),
    textDecoration: "line-through",
  });
  private readonly insert = vscode.window.createTextEditorDecorationType({
    after: { backgroundColor: new vscode.ThemeColor("diffEditor.insertedTextBackground"),
             color: new vscode.ThemeColor("editor.foreground"), margin: "0 0 0 1px" },
  });
  private readonly hint = vscode.window.createTextEditorDecorationType({
    after: { color: new vscode.ThemeColor("editorCodeLens.foreground"), fontStyle: "italic" },
  });
  private readonly subscriptions: vscode.Disposable[] = [];
  private status: NextEditStatus = "off";
  private message = "";
  private shown: Shown | undefined;
  private pending: vscode.CancellationTokenSource | undefined;
  private timer: NodeJS.Timeout | undefined;
  private applying = false; // our own edit's change event does not ask again (accept does)

  constructor(private readonly client: () => LanguageClient | undefined) {
    this.item.name = "AgentLS next edit";
    this.item.command = "agentls.ui.toggleNextEdit";
    this.subscriptions.push(
      vscode.workspace.onDidChangeConfiguration((event) => {
        if (event.affectsConfiguration("agentls.nextEdit.enabled")) {
          if (!enabled()) this.clear();
          this.render();
        }
      }),
      vscode.workspace.onDidChangeTextDocument((event) => this.changed(event)),
      vscode.window.onDidChangeActiveTextEditor(() => this.clear()),
    );
    this.render();
    this.item.show();
  }

  /** Before the client starts: the status notification. */
  attach(client: LanguageClient): void {
    client.onNotification("agentls/nextEditStatus", (params: { status: NextEditStatus; message?: string }) => {
      this.status = params.status;
      this.message = params.message ?? "";
      if (this.status === "off") this.clear();
      this.render();
    });
  }

  /** The suggestion on screen (for tests and the e2e): its text, range and whether it is away. */
  current(): { text: string; line: number; away: boolean } | undefined {
    const shown = this.shown;
    return shown && { text: shown.edit.text, line: shown.range.start.line, away: shown.away };
  }

  async toggle(): Promise<void> {
    await vscode.workspace.getConfiguration("agentls").update("nextEdit.enabled", !enabled(),
                                                               vscode.ConfigurationTarget.Global);
    this.render();
  }

  private changed(event: vscode.TextDocumentChangeEvent): void {
    const editor = vscode.window.activeTextEditor;
    if (!editor || event.document !== editor.document || event.contentChanges.length === 0) return;
    if (this.applying) return;
    this.clear();
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.request(editor), DELAY_MS);
  }

  /** Ask for the next edit at the editor's cursor now. */
  async request(editor = vscode.window.activeTextEditor): Promise<void> {
    const client = this.client();
    if (!editor || !client?.isRunning() || !enabled() || this.status === "off") return;
    this.pending?.cancel();
    const pending = this.pending = new vscode.CancellationTokenSource();
    const document = editor.document;
    const version = document.version;
    const params = {
      textDocument: { uri: client.code2ProtocolConverter.asUri(document.uri), version },
      position: client.code2ProtocolConverter.asPosition(editor.selection.active),
    };
    let result: unknown;
    try {
      result = await client.sendRequest("agentls/nextEdit", params, pending.token);
    } catch {
      return; // cancelled by a newer request, or the server is gone: nothing to show
    }
    if (pending.token.isCancellationRequested || document.version !== version
        || vscode.window.activeTextEditor !== editor) return; // the person moved on
    const edit = firstEdit(result);
    if (!edit) {
      this.clear();
      return;
    }
    this.draw(editor, client, edit, version);
  }

  private draw(editor: vscode.TextEditor, client: LanguageClient, edit: WireEdit, version: number,
               away?: boolean): void {
    this.clearDecorations();
    const range = client.protocol2CodeConverter.asRange(edit.range);
    const visible = editor.visibleRanges.map((r) => ({ start: r.start.line, end: r.end.line }));
    const isAway = away ?? !onScreen(range.start.line, visible);
    const drawn = drawnOf(edit);
    const hover = new vscode.MarkdownString();
    hover.appendText("AgentLS next edit (Tab accepts, Escape dismisses):\n");
    hover.appendCodeblock(drawn.full, editor.document.languageId);
    editor.setDecorations(this.strike, drawn.strikes ? [{ range, hoverMessage: hover }] : []);
    editor.setDecorations(this.insert, drawn.full ? [{
      range: new vscode.Range(range.end, range.end), hoverMessage: hover,
      renderOptions: { after: { contentText: drawn.label } },
    }] : []);
    if (isAway) {
      const line = editor.selection.active.line;
      const end = editor.document.lineAt(line).range.end;
      editor.setDecorations(this.hint, [{ range: new vscode.Range(end, end),
                                          renderOptions: { after: { contentText: hintOf(range.start.line) } } }]);
    } else {
      editor.setDecorations(this.hint, []);
    }
    this.shown = { editor, edit, range, version, away: isAway, client };
    void vscode.commands.executeCommand("setContext", CONTEXT_KEY, true);
    void client.sendNotification("textDocument/didShowInlineEdit", { item: { command: edit.command } });
  }

  /** Tab: jump to an off-screen suggestion, else apply it, tell the server and ask again. */
  async accept(): Promise<boolean> {
    const shown = this.shown;
    if (!shown || vscode.window.activeTextEditor !== shown.editor) return false;
    const { editor, edit, range, client } = shown;
    if (editor.document.version !== shown.version) {
      this.clear();
      return false;
    }
    if (shown.away) {
      editor.selection = new vscode.Selection(range.start, range.start);
      editor.revealRange(range, vscode.TextEditorRevealType.InCenter);
      this.draw(editor, client, edit, shown.version, false);
      return true;
    }
    this.clear();
    this.applying = true;
    let applied = false;
    try {
      applied = await editor.edit((builder) => builder.replace(range, edit.text));
    } finally {
      this.applying = false;
    }
    if (!applied) return false;
    const end = client.protocol2CodeConverter.asPosition(endAfter(edit));
    editor.selection = new vscode.Selection(end, end);
    if (edit.command) {
      void client.sendRequest(ExecuteCommandRequest.type, { command: edit.command.command,
                                                            arguments: edit.command.arguments })
        .catch(() => undefined);
    }
    await this.request(editor);
    return true;
  }

  /** Escape: hide it and tell the server it was turned down. */
  dismiss(): void {
    const shown = this.shown;
    this.clear();
    const id = shown && suggestionId(shown.edit);
    if (shown && id) {
      void shown.client.sendRequest(ExecuteCommandRequest.type, {
        command: "agentls.nextEdit.reject", arguments: [id] }).catch(() => undefined);
    }
  }

  clear(): void {
    this.pending?.cancel();
    this.pending = undefined;
    this.clearDecorations();
    if (this.shown) {
      this.shown = undefined;
      void vscode.commands.executeCommand("setContext", CONTEXT_KEY, false);
    }
  }

  private clearDecorations(): void {
    const editor = this.shown?.editor;
    if (editor) {
      for (const type of [this.strike, this.insert, this.hint]) editor.setDecorations(type, []);
    }
  }

  private render(): void {
    const label = statusLabel(enabled(), this.status, this.message);
    this.item.text = label.text;
    this.item.tooltip = label.tooltip;
    this.item.backgroundColor = label.warning
      ? new vscode.ThemeColor("statusBarItem.warningBackground") : undefined;
  }

  dispose(): void {
    clearTimeout(this.timer);
    this.clear();
    for (const disposable of this.subscriptions) disposable.dispose();
    this.strike.dispose();
    this.insert.dispose();
    this.hint.dispose();
    this.item.dispose();
  }
}
