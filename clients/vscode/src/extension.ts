// AgentLS for VS Code: starts `agentls serve`, adds the palette commands, the chat panel, the
// status bar item, and asks for a review of every agent edit (src/review.ts).
import * as vscode from "vscode";
import {
  ApplyWorkspaceEditRequest, type ApplyWorkspaceEditParams, type ApplyWorkspaceEditResult,
  ExecuteCommandRequest, type LanguageClient, ShowMessageRequest,
} from "vscode-languageclient/node";
import { Chat, messageOf, recordTiming } from "./chat";
import { Conversation } from "./conversation";
import { ChatPanel } from "./panel";
import { applyThroughServer, chooseBackend, explainInChat, onPanelMessage } from "./panelActions";
import { showMessageRequest } from "./prompts";
import { RESTART_KEYS } from "./pure/config";
import { MAX_RESTARTS, onServerStop, startMayBeRetried } from "./pure/restarts";
import { CompletionStatusItem } from "./completion";
import { NextEdits } from "./nextEdit";
import { createClient, serverCommand, serverConfig, showMcpServers } from "./server";
import { EditorReview } from "./editorReview";
import { registerReviewFloor } from "./reviewFloor";
import { reviewEdit } from "./review";
import { StatusItem } from "./status";

const SECRET_KEY = "agentls.apiKey";

let client: LanguageClient | undefined;
let starting: Promise<void> | undefined;
let keyStored = false;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const activated = performance.now();
  const output = vscode.window.createOutputChannel("AgentLS");
  const status = new StatusItem();
  const panel = new ChatPanel(context.extensionUri,
                              (m) => onPanelMessage(m, chat, conversation, apply));
  const apply = applyThroughServer(() => client, () => chat.sessionId);
  const chat: Chat = new Chat(context.workspaceState, panel, status, () => client);
  const completion = new CompletionStatusItem();
  const nextEdits = new NextEdits(() => client);
  const inEditor = new EditorReview(context.extensionUri, status);
  const conversation = new Conversation(() => client, panel, status);
  if (process.env.AGENTLS_VSCODE_TIMINGS) context.subscriptions.push(registerReviewFloor(context.extensionUri));
  chat.options = { params: (id) => conversation.chatParams(id),
                   sessionChanged: (id) => void conversation.refresh(id) };
  context.subscriptions.push(output, status, completion, nextEdits, inEditor,
    vscode.window.registerWebviewViewProvider(ChatPanel.viewId, panel,
                                              { webviewOptions: { retainContextWhenHidden: true } }));

  const start = async (): Promise<void> => {
    status.set("starting");
    const apiKey = await context.secrets.get(SECRET_KEY);
    keyStored = Boolean(apiKey);
    const command = serverCommand(vscode.workspace.getConfiguration("agentls"));
    output.appendLine(`Starting ${command.command} ${command.args.join(" ")} (from ${command.how})` +
                      (apiKey ? "; API key from SecretStorage in $AGENTLS_API_KEY" : ""));
    const began = performance.now();
    const stops: number[] = [];
    let next: LanguageClient;
    for (;;) {
      next = createClient(command, apiKey, output,
                          () => status.set("error", "the server stopped; see AgentLS: Show Log"));
      next.onNotification("agentls/chatEvent", (event) => chat.onEvent(event));
      completion.attach(next);
      nextEdits.attach(next);
      // A server that ends during start-up can leave start() resolved with the client not
      // running (vscode-languageclient), or rejected with -32097: both may be tried again.
      let failure: unknown;
      try {
        await next.start();
      } catch (error) {
        failure = error;
      }
      if (failure === undefined && next.isRunning()) break;
      void next.dispose().catch(() => undefined);
      const decision = failure === undefined || startMayBeRetried(failure)
        ? onServerStop(stops, Date.now()) : undefined;
      if (!decision?.restart) {
        const reason = failure === undefined ? "it ended while starting" : messageOf(failure);
        status.set("error", "the server did not start");
        void notStarted(command.command, reason, output, context.extensionUri);
        return;
      }
      output.appendLine(`The AgentLS server ended while starting; trying again in ` +
                        `${decision.delayMs / 1000} s (attempt ${decision.attempt} of ${MAX_RESTARTS}).`);
      await new Promise((resolve) => setTimeout(resolve, decision.delayMs));
    }
    client = next;
    installHandlers(next, status, inEditor);
    recordTiming({ figure: "initialize", activationToInitializeMs: performance.now() - activated,
                   startToInitializeMs: performance.now() - began });
    status.set("idle");
    await chat.restore((line) => output.appendLine(line));
    await conversation.refresh(chat.sessionId);
  };

  const restart = async (): Promise<void> => {
    await starting;
    const old = client;
    client = undefined;
    if (old) await old.stop().catch((e) => output.appendLine(`stop: ${messageOf(e)}`));
    starting = start();
    await starting;
  };

  let debounce: NodeJS.Timeout | undefined;
  context.subscriptions.push(vscode.workspace.onDidChangeConfiguration((event) => {
    if (RESTART_KEYS.some((key) => event.affectsConfiguration(key))) {
      clearTimeout(debounce);
      debounce = setTimeout(() => void restart(), 500);
    } else if (event.affectsConfiguration("agentls") && client?.isRunning()) {
      void client.sendNotification("workspace/didChangeConfiguration",
                                   { settings: { agentls: serverConfig(keyStored) } });
    }
  }));

  const register = (id: string, run: (...args: unknown[]) => unknown) =>
    context.subscriptions.push(vscode.commands.registerCommand(id, run));

  register("agentls.ui.chat", async (prompt?: unknown) => {
    const text = typeof prompt === "string" ? prompt : await vscode.window.showInputBox({
      title: "AgentLS: Chat", prompt: "Ask the agent (you review its edits before they land)",
      placeHolder: "e.g. fix the failing test in calc.py", ignoreFocusOut: true,
    });
    if (!text?.trim()) return;
    // The request goes out first; the panel shows the turn as soon as it is revealed.
    const sending = chat.send(text.trim(), undefined, performance.now());
    await panel.reveal();
    await sending;
  });
  register("agentls.ui.askAboutSelection", async () => {
    const editor = vscode.window.activeTextEditor;
    if (!editor) {
      void vscode.window.showWarningMessage("AgentLS: open a file and select some code first.");
      return;
    }
    const text = await vscode.window.showInputBox({
      title: "AgentLS: Ask About Selection", placeHolder: "e.g. what does this do?",
      value: "Explain this code.", ignoreFocusOut: true,
    });
    if (!text?.trim()) return;
    const s = editor.selection;
    const sending = chat.send(text.trim(), {
      uri: editor.document.uri.toString(),
      range: { start: { line: s.start.line, character: s.start.character },
               end: { line: s.end.line, character: s.end.character } },
    }, performance.now());
    await panel.reveal();
    await sending;
  });
  register("agentls.ui.toggleCompletion", () => completion.toggle());
  register("agentls.ui.toggleNextEdit", () => nextEdits.toggle());
  register("agentls.ui.requestNextEdit", () => nextEdits.request());
  register("agentls.ui.acceptNextEdit", async () => {
    if (!(await nextEdits.accept())) await vscode.commands.executeCommand("tab");
  });
  register("agentls.ui.dismissNextEdit", () => nextEdits.dismiss());
  register("agentls.ui.nextEditShown", () => nextEdits.current()); // for the end-to-end test
  register("agentls.ui.cancel", async () => {
    if (!(await chat.cancel())) void vscode.window.showInformationMessage("AgentLS: nothing is running.");
  });
  register("agentls.ui.newSession", async () => {
    chat.newSession();
    await panel.reveal();
    panel.focusInput();
  });
  register("agentls.ui.openSession", async () => {
    if (!client?.isRunning()) {
      void vscode.window.showErrorMessage("AgentLS: the server is not running; see AgentLS: Show Log.");
      return;
    }
    const answer = await client.sendRequest<{ sessions: SessionInfo[] }>("agentls/sessions",
                                                                         { limit: 50 });
    const picked = await vscode.window.showQuickPick(answer.sessions.map((s) => ({
      label: s.title || "(untitled session)",
      description: `${s.messageCount} messages · ${s.model}`,
      detail: new Date(s.updatedAt * 1000).toLocaleString(), id: s.id,
    })), { title: "AgentLS: Open Session", placeHolder: "Pick a session to continue" });
    if (!picked) return;
    await chat.openSession(picked.id);
    await panel.reveal();
  });
  register("agentls.ui.commitMessage", async () => {
    if (!client?.isRunning()) {
      void vscode.window.showErrorMessage("AgentLS: the server is not running; see AgentLS: Show Log.");
      return;
    }
    const git = vscode.extensions.getExtension<GitExtension>("vscode.git")?.exports?.getAPI(1);
    const repo = git?.repositories[0];
    const message = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.SourceControl, title: "AgentLS: writing a commit message" },
      () => client!.sendRequest(ExecuteCommandRequest.type, {
        command: "agentls.commitMessage",
        arguments: repo ? [{ root: repo.rootUri.toString() }] : [],
      }));
    if (typeof message !== "string") return;
    if (repo) repo.inputBox.value = message;
    else await vscode.env.clipboard.writeText(message).then(() =>
      vscode.window.showInformationMessage("AgentLS: commit message copied (no Git repository open)."));
  });
  register("agentls.ui.explain", (arg?: unknown) => explainInChat(chat, panel, arg));
  register("agentls.ui.chooseBackend", () => chooseBackend());
  register("agentls.ui.showLog", () => output.show(true));
  register("agentls.ui.showMcpServers", () => showMcpServers(output));
  register("agentls.ui.setApiKey", async () => {
    const key = await vscode.window.showInputBox({
      title: "AgentLS: Set API Key", password: true, ignoreFocusOut: true,
      prompt: "Stored in VS Code's secret storage; given to the AgentLS server through its " +
        "environment only. Leave empty to remove the stored key.",
    });
    if (key === undefined) return;
    if (key.trim()) await context.secrets.store(SECRET_KEY, key.trim());
    else await context.secrets.delete(SECRET_KEY);
    await restart();
    void vscode.window.showInformationMessage(key.trim()
      ? "AgentLS: API key stored; the server was restarted with it."
      : "AgentLS: API key removed.");
  });
  register("agentls.ui.restartServer", () => restart());

  starting = start();
  await starting;
}

export async function deactivate(): Promise<void> {
  await client?.stop();
}

interface SessionInfo {
  id: string; title: string | null; updatedAt: number; model: string; messageCount: number;
}

interface GitExtension {
  getAPI(version: 1): {
    repositories: { rootUri: vscode.Uri; inputBox: { value: string } }[];
  };
}

async function notStarted(command: string, reason: string, output: vscode.OutputChannel,
                          extensionUri: vscode.Uri) {
  output.appendLine(`The server did not start: ${reason}`);
  const choice = await vscode.window.showErrorMessage(
    `AgentLS could not start its language server (${command}): ${reason}. Install AgentLS ` +
    "from its checkout (`pipx install /path/to/agentls`) so `agentls` is on PATH, or set " +
    "agentls.server.command" + (vscode.env.remoteName
      ? " in the Remote settings (a machine setting: the user settings' value is not used in a remote window)."
      : "."),
    "Installation Steps", "Open Settings", "Show Log");
  if (choice === "Installation Steps") {
    // The README shipped in the .vsix: its "Getting started" says how, offline too.
    await vscode.commands.executeCommand("markdown.showPreview",
                                         vscode.Uri.joinPath(extensionUri, "README.md"));
  } else if (choice === "Open Settings") {
    await vscode.commands.executeCommand("workbench.action.openSettings", "agentls.server");
  } else if (choice === "Show Log") {
    output.show(true);
  }
}

function installHandlers(lc: LanguageClient, status: StatusItem, inEditor: EditorReview): void {
  // Agent edits: reviewed in the editor hunk by hunk (src/editorReview.ts) or in the picker
  // (Enter keeps all; untick to leave a file out; the refactor preview one click away); what
  // the person kept goes back to the run (src/review.ts).
  lc.onRequest(ApplyWorkspaceEditRequest.type, (params: ApplyWorkspaceEditParams): Promise<ApplyWorkspaceEditResult> =>
    reviewEdit(lc, status, inEditor, params));
  // Approvals and the agent's questions: a modal with the full text (src/prompts.ts).
  lc.onRequest(ShowMessageRequest.type, showMessageRequest);
}
