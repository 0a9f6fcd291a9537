// The conversation's options and context, from the server: the model and mode of the chat
// (agentls/models, agentls/setModel, agentls/setMode), shown in the panel's header and the
// status bar, and the completion of mentions typed in the panel's input (agentls/mentions).
// The server resolves what a mention points at; this module only fills in what the editor
// alone knows (the current buffer, the selection, the diagnostics it shows).
import * as vscode from "vscode";
import type { LanguageClient } from "vscode-languageclient/node";
import { messageOf } from "./chat";
import type { ChatPanel } from "./panel";
import { type BackendOption, type ModelRow, modelRows } from "./pure/models";
import type { StatusItem } from "./status";

const METHOD_NOT_FOUND = -32601;

interface ModeOption { name: string; label: string; description: string }
interface ModelsAnswer {
  backends: BackendOption[];
  modes: ModeOption[];
  defaultMode: string;
  session?: { sessionId: string; backend: string; model: string; mode: string };
}
interface OptionsAnswer { sessionId: string; backend: string; model: string; mode: string; message: string;
                         running?: boolean }

export interface MentionItem { label: string; kind: string; detail?: string; reference: Record<string, unknown> }

export class Conversation {
  /** Chosen before the chat has a session: sent with its first request. */
  private pending: { model?: string; backend?: string; mode?: string } = {};
  private modes: ModeOption[] = [];
  private supported = true;

  constructor(private readonly client: () => LanguageClient | undefined,
              private readonly panel: ChatPanel, private readonly status: StatusItem) {}

  /** The header and status bar for `sessionId` (none: a new chat, the defaults). */
  async refresh(sessionId: string | undefined): Promise<void> {
    // The names only: answered from the configuration, no backend asked (probe: false).
    const answer = await this.request<ModelsAnswer>("agentls/models", modelsParams(sessionId, false));
    if (!answer) {
      this.panel.options(null);
      return;
    }
    this.modes = answer.modes;
    const active = answer.backends.find((b) => b.active);
    const shown = answer.session ?? {
      backend: this.pending.backend ?? active?.name ?? "",
      model: this.pending.model ?? active?.model ?? "",
      mode: this.pending.mode ?? answer.defaultMode,
    };
    this.panel.options({ model: shown.model, backend: shown.backend, mode: shown.mode, modes: this.modes });
    this.status.setSession([shown.model, shown.mode].filter(Boolean).join(" · "));
  }

  /** What a chat request carries besides the prompt: the options chosen for a new chat. */
  chatParams(sessionId: string | undefined): Record<string, unknown> {
    if (sessionId) return {};
    const params = { ...this.pending };
    this.pending = {};
    return Object.fromEntries(Object.entries(params).filter(([, v]) => v));
  }

  /** The model picker: open at once with the configured models, the served ones filled in
   * when the servers have answered (each within the server's short bound). */
  async chooseModel(sessionId: string | undefined): Promise<void> {
    const quick = await this.request<ModelsAnswer>("agentls/models", modelsParams(sessionId, false));
    if (!quick) {
      void vscode.window.showWarningMessage("AgentLS: this server cannot switch models; set agentls.model.");
      return;
    }
    const current = quick.session?.model;
    const pick = vscode.window.createQuickPick<ModelRow>();
    pick.title = "AgentLS: Model for this chat";
    pick.placeholder = "The model that answers the next turn";
    pick.matchOnDescription = true;
    pick.items = modelRows(quick.backends, current, false);
    pick.busy = true;
    let open = true;
    const picked = new Promise<ModelRow | undefined>((resolve) => {
      pick.onDidAccept(() => {
        resolve(pick.selectedItems[0] ?? pick.activeItems[0]);
        pick.hide();
      });
      pick.onDidHide(() => {
        open = false;
        resolve(undefined);
      });
    });
    pick.show();
    void this.request<ModelsAnswer>("agentls/models", modelsParams(sessionId, true)).then((full) => {
      if (!open) return;
      if (full) pick.items = modelRows(full.backends, current, true);
      pick.busy = false;
    });
    const chosen = await picked;
    pick.dispose();
    if (!chosen) return;
    if (!sessionId) {
      this.pending.model = chosen.model;
      this.pending.backend = chosen.backend;
    } else {
      const done = await this.request<OptionsAnswer>(
        "agentls/setModel", { sessionId, model: chosen.model, backend: chosen.backend }, true);
      if (done) switched(done);
    }
    await this.refresh(sessionId);
  }

  async setMode(sessionId: string | undefined, mode: string): Promise<void> {
    if (!sessionId) {
      this.pending.mode = mode;
    } else {
      const done = await this.request<OptionsAnswer>("agentls/setMode", { sessionId, mode }, true);
      if (done) switched(done);
    }
    await this.refresh(sessionId);
  }

  /** Completion for a mention being typed: `#sel` -> #selection, `@calc` -> a file ... */
  async mentions(id: number, query: string): Promise<void> {
    const answer = await this.request<{ items: MentionItem[] }>("agentls/mentions", { query, limit: 20 });
    this.panel.mentionItems(id, answer?.items ?? []);
  }

  private async request<T>(method: string, params: object, loud = false): Promise<T | undefined> {
    const client = this.client();
    if (!client?.isRunning() || !this.supported) return undefined;
    try {
      return await client.sendRequest<T>(method, params);
    } catch (error) {
      if ((error as { code?: unknown }).code === METHOD_NOT_FOUND) {
        this.supported = false; // an older server: no header, no completion
      } else if (loud) {
        void vscode.window.showErrorMessage(`AgentLS: ${messageOf(error)}`);
      }
      return undefined;
    }
  }
}

/** agentls/models for the chat (`probe`: ask the backends what they serve). */
function modelsParams(sessionId: string | undefined, probe: boolean): Record<string, unknown> {
  return sessionId ? { sessionId, probe } : { probe };
}

/** After a switch: the status bar item names the model and mode (refresh), so they are not
 * said again beside it; only what it cannot show, that a run is on and keeps its own. */
function switched(done: OptionsAnswer): void {
  if (done.running) {
    void vscode.window.setStatusBarMessage("AgentLS: the switch applies from the next turn (a run is on)", 4000);
  }
}

/** A mention's reference with what only the editor knows: the buffer, the selection, the
 * diagnostics it shows. */
export function completeReference(reference: Record<string, unknown>): Record<string, unknown> {
  const editor = vscode.window.activeTextEditor;
  const kind = reference.kind;
  if (!editor || reference.uri || !["buffer", "selection", "diagnostics"].includes(String(kind))) {
    return reference;
  }
  const uri = editor.document.uri.toString();
  if (kind === "buffer") return { ...reference, uri };
  if (kind === "selection") {
    const s = editor.selection;
    return { ...reference, uri, range: { start: { line: s.start.line, character: s.start.character },
                                         end: { line: s.end.line, character: s.end.character } } };
  }
  const diagnostics = vscode.languages.getDiagnostics(editor.document.uri).map((d) => ({
    uri, message: d.message, severity: d.severity + 1, source: d.source,
    range: { start: { line: d.range.start.line, character: d.range.start.character },
             end: { line: d.range.end.line, character: d.range.end.character } },
  }));
  return { ...reference, uri, diagnostics };
}
