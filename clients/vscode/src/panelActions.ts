// What the chat panel's buttons do in the editor: code blocks' Copy / Insert / Apply, the
// empty state's commands, "Explain" asked in the chat, choosing the backend.
import * as path from "node:path";
import * as vscode from "vscode";
import type { LanguageClient } from "vscode-languageclient/node";
import type { Chat, ChatContext } from "./chat";
import { completeReference, type Conversation } from "./conversation";
import type { ChatPanel, PanelMessage } from "./panel";

/** Commands the panel may run (its buttons); anything else it names is ignored. */
const PANEL_COMMANDS = new Set(["agentls.ui.setApiKey", "agentls.ui.chooseBackend",
                                "agentls.ui.newSession", "agentls.ui.openSession"]);

/** Backends the settings offer (package.json's enum for agentls.backend), with a word each. */
const BACKENDS: { id: string; detail: string }[] = [
  { id: "openai", detail: "OpenAI, or any OpenAI-compatible server at agentls.baseUrl (needs an API key)" },
  { id: "ollama", detail: "Ollama on this machine (http://localhost:11434/v1), no key" },
  { id: "vllm", detail: "a vLLM server (set agentls.baseUrl)" },
  { id: "llamacpp", detail: "a llama.cpp server (set agentls.baseUrl)" },
  { id: "codex", detail: "the installed Codex CLI" },
  { id: "copilot", detail: "the installed GitHub Copilot CLI" },
  { id: "claude", detail: "the installed Claude Code CLI" },
];

export function onPanelMessage(message: PanelMessage, chat: Chat, conversation: Conversation,
                               apply: ApplyCode): void {
  switch (message.type) {
    case "ready":
      chat.redraw(true);
      break;
    case "send":
      void chat.send(message.prompt, undefined, performance.now(),
                     (message.references ?? []).map(completeReference));
      break;
    case "mentions":
      void conversation.mentions(message.id, message.query);
      break;
    case "chooseModel":
      void conversation.chooseModel(chat.sessionId);
      break;
    case "setMode":
      void conversation.setMode(chat.sessionId, message.mode);
      break;
    case "cancel":
      void chat.cancel();
      break;
    case "earlier":
      void chat.showEarlier();
      break;
    case "firstText":
      chat.firstTextShown(message.turn);
      break;
    case "chunkTimes":
      chat.chunkTimesShown(message.turn, message.ms);
      break;
    case "drawn":
      chat.viewDrawn(message.ms);
      break;
    case "command":
      if (PANEL_COMMANDS.has(message.command)) void vscode.commands.executeCommand(message.command);
      break;
    case "code":
      void codeAction(message.action, message.code, apply);
      break;
  }
}

/** Sends a code block to the server, which proposes it as an edit of `editor`'s selection
 * (reviewed like any agent edit); undefined when this server cannot. */
export type ApplyCode = (editor: vscode.TextEditor, code: string) => Promise<void>;

async function codeAction(action: "copy" | "insert" | "apply", code: string,
                          apply: ApplyCode): Promise<void> {
  if (action === "copy") {
    await vscode.env.clipboard.writeText(code);
    return;
  }
  const editor = vscode.window.activeTextEditor ?? vscode.window.visibleTextEditors[0];
  if (!editor) {
    void vscode.window.showWarningMessage(
      `AgentLS: open the file to ${action === "insert" ? "insert" : "apply"} the code in first.`);
    return;
  }
  if (action === "insert") {
    const done = await editor.edit((edit) => {
      for (const selection of editor.selections) edit.replace(selection, code);
    });
    if (!done) void vscode.window.showWarningMessage("AgentLS: the editor did not take the code.");
    await vscode.window.showTextDocument(editor.document, editor.viewColumn);
    return;
  }
  await apply(editor, code);
}

export async function chooseBackend(): Promise<void> {
  const config = vscode.workspace.getConfiguration("agentls");
  const current = config.get<string>("backend", "openai");
  const picked = await vscode.window.showQuickPick(
    BACKENDS.map((b) => ({ label: b.id, detail: b.detail,
                           description: b.id === current ? "current" : undefined })),
    { title: "AgentLS: Choose Backend", placeHolder: "The model backend the agent uses" });
  if (!picked || picked.label === current) return;
  await config.update("backend", picked.label, vscode.ConfigurationTarget.Global);
  const next = picked.label === "openai" ? " Set the API key next (AgentLS: Set API Key)." :
    ["vllm", "llamacpp"].includes(picked.label) ? " Set its address in agentls.baseUrl." : "";
  void vscode.window.showInformationMessage(`AgentLS: backend set to ${picked.label}.${next}`);
}

/** The "Explain" code action (and any explain request): asked in the chat panel, with the
 * selection attached, instead of a Markdown file. */
export async function explainInChat(chat: Chat, panel: ChatPanel, raw: unknown): Promise<void> {
  const arg = (Array.isArray(raw) ? raw[0] : raw) as { uri?: unknown; range?: ChatContext["range"] };
  const editor = vscode.window.activeTextEditor;
  const uri = typeof arg?.uri === "string" ? arg.uri : editor?.document.uri.toString();
  if (!uri) {
    void vscode.window.showWarningMessage("AgentLS: open a file and select some code to explain.");
    return;
  }
  const range = arg?.range ?? (editor ? {
    start: { line: editor.selection.start.line, character: editor.selection.start.character },
    end: { line: editor.selection.end.line, character: editor.selection.end.character },
  } : undefined);
  const name = path.basename(vscode.Uri.parse(uri).path);
  const selected = range && (range.start.line !== range.end.line ||
                             range.start.character !== range.end.character);
  // A selection of whole lines ends at the start of the next line: that line is not in it.
  const last = range && range.end.character === 0 && range.end.line > range.start.line
    ? range.end.line - 1 : range?.end.line;
  const where = !range ? name : selected
    ? `${name}, ${range.start.line === last ? `line ${range.start.line + 1}`
      : `lines ${range.start.line + 1}–${last! + 1}`}`
    : `${name} around line ${range.start.line + 1}`;
  const prompt = `Explain ${selected ? "the selected code" : "this code"} (${where}): what it ` +
    "does, how it does it, and anything surprising or risky.";
  const sending = chat.send(prompt, { uri, range }, performance.now());
  await panel.reveal();
  await sending;
}

/** Apply: the code replaces the editor's selection (or goes in at the cursor), proposed by
 * the server (agentls/proposeEdit) as one workspace edit that needs confirmation, like an
 * agent's edit: it opens in the refactor preview and nothing changes until it is applied
 * there. */
export function applyThroughServer(client: () => LanguageClient | undefined,
                                   session: () => string | undefined): ApplyCode {
  return async (editor, code) => {
    const lc = client();
    if (!lc?.isRunning()) {
      void vscode.window.showErrorMessage("AgentLS: the server is not running; see AgentLS: Show Log.");
      return;
    }
    const s = editor.selection;
    try {
      const answer = await lc.sendRequest<{ applied: boolean; failureReason?: string }>(
        "agentls/proposeEdit", {
          sessionId: session(), uri: editor.document.uri.toString(), text: code,
          range: { start: { line: s.start.line, character: s.start.character },
                   end: { line: s.end.line, character: s.end.character } },
        });
      void vscode.window.setStatusBarMessage(answer.applied ? "AgentLS: code block applied"
        : `AgentLS: code block not applied${answer.failureReason ? ` (${answer.failureReason})` : ""}`, 5000);
    } catch (error) {
      void vscode.window.showErrorMessage(`AgentLS: ${error instanceof Error ? error.message : String(error)}`);
    }
  };
}
