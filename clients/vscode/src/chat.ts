// One conversation in the panel: sends agentls/chat, folds agentls/chatEvent into the model,
// cancels, restores a session's history (agentls/history).
import * as fs from "node:fs";
import * as vscode from "vscode";
import type { LanguageClient } from "vscode-languageclient/node";
import {
  applyEvent, applyResult, type ChatEvent, type ChatResult, emptyModel, failTurn, fromHistory,
  type HistoryMessage, type PanelModel, restoreFailure, running, startTurn,
} from "./pure/model";
import { toView } from "./pure/view";
import type { ChatPanel } from "./panel";
import type { StatusItem } from "./status";

const SESSION_KEY = "agentls.sessionId";
const RESTORE_ATTEMPTS = 3;

export interface ChatContext {
  uri?: string;
  range?: { start: { line: number; character: number }; end: { line: number; character: number } };
}

interface Timing {
  started: number; // the person submitted the prompt
  sent?: number; // agentls/chat written to the server
  firstEvent?: number; // first text event received
}

/** Writes timing figures for the benchmark when AGENTLS_VSCODE_TIMINGS names a file. */
export function recordTiming(figure: Record<string, unknown>): void {
  const file = process.env.AGENTLS_VSCODE_TIMINGS;
  if (file) fs.appendFileSync(file, JSON.stringify(figure) + "\n");
}

export class Chat {
  private model: PanelModel;
  private readonly cancels = new Map<number, vscode.CancellationTokenSource>();
  private readonly timings = new Map<number, Timing>();
  private lastPost = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly state: vscode.Memento, private readonly panel: ChatPanel,
              private readonly status: StatusItem,
              private readonly client: () => LanguageClient | undefined) {
    this.model = emptyModel(state.get<string>(SESSION_KEY));
  }

  get sessionId(): string | undefined {
    return this.model.sessionId;
  }

  get isRunning(): boolean {
    return running(this.model) !== undefined;
  }

  async send(prompt: string, context?: ChatContext, started = performance.now()): Promise<void> {
    const client = this.client();
    const turn = startTurn(this.model, prompt);
    this.timings.set(turn.id, { started });
    this.refresh(true);
    if (!client?.isRunning()) {
      failTurn(turn, "The AgentLS server is not running: see “AgentLS: Show Log”, then run " +
        "“AgentLS: Restart Server”.");
      this.refresh(true);
      return;
    }
    this.status.set("running", "starting the run");
    const source = new vscode.CancellationTokenSource();
    this.cancels.set(turn.id, source);
    const params: Record<string, unknown> = { prompt };
    if (this.model.sessionId) params.sessionId = this.model.sessionId;
    if (context) params.context = context;
    try {
      const request = client.sendRequest<ChatResult>("agentls/chat", params, source.token);
      this.timings.get(turn.id)!.sent = performance.now();
      const result = await request;
      applyResult(this.model, turn, result);
    } catch (error) {
      if (source.token.isCancellationRequested) {
        applyResult(this.model, turn, { stopReason: "cancelled" });
      } else {
        failTurn(turn, `AgentLS could not run this request: ${messageOf(error)}`);
      }
    } finally {
      this.cancels.delete(turn.id);
      source.dispose();
    }
    void this.state.update(SESSION_KEY, this.model.sessionId);
    this.status.set(turn.state === "error" ? "error" : "idle",
                    turn.state === "error" ? "the last run failed" : "");
    this.refresh(true);
  }

  onEvent(event: ChatEvent): void {
    const turn = applyEvent(this.model, event);
    if (!turn) return;
    if (event.kind === "text") {
      const timing = this.timings.get(turn.id);
      if (timing && timing.firstEvent === undefined) {
        timing.firstEvent = performance.now();
        this.refresh(true);
        return;
      }
    }
    if (turn.state === "running" && turn.status) this.status.set("running", turn.status);
    this.refresh(false);
  }

  /** The webview drew the turn's first text. */
  firstTextShown(turnId: number): void {
    const timing = this.timings.get(turnId);
    if (!timing || timing.sent === undefined || timing.firstEvent === undefined) return;
    const now = performance.now();
    recordTiming({
      figure: "first_token", commandToShownMs: now - timing.started,
      requestToFirstEventMs: timing.firstEvent - timing.sent,
      commandToSentMs: timing.sent - timing.started, eventToShownMs: now - timing.firstEvent,
    });
    this.timings.delete(turnId);
  }

  async cancel(): Promise<boolean> {
    const turn = running(this.model);
    if (!turn) return false;
    turn.status = "cancelling…";
    this.refresh(true);
    const client = this.client();
    if (turn.runId && client?.isRunning()) {
      try {
        await client.sendRequest("agentls/cancel", { runId: turn.runId });
        return true;
      } catch (error) {
        turn.parts.push({ type: "note", level: "warning",
                          text: `Cancel failed: ${messageOf(error)}` });
      }
    }
    this.cancels.get(turn.id)?.cancel(); // not started yet (or the server is gone)
    return true;
  }

  newSession(): void {
    for (const source of this.cancels.values()) source.cancel();
    this.model = emptyModel();
    void this.state.update(SESSION_KEY, undefined);
    this.refresh(true, true);
  }

  async openSession(sessionId: string): Promise<void> {
    this.model = fromHistory(sessionId, await this.history(sessionId));
    void this.state.update(SESSION_KEY, sessionId);
    this.refresh(true, true);
  }

  /** After start-up: the stored session's history, so a reload shows the conversation. A
   * session the server does not have is forgotten; any other failure is tried again
   * (RESTORE_ATTEMPTS, a second apart), then the id is kept and the person told. */
  async restore(log: (line: string) => void): Promise<void> {
    const sessionId = this.model.sessionId;
    if (!sessionId || this.model.turns.length > 0) {
      this.refresh(true);
      return;
    }
    // The person may start a turn (or a new session) while a request is out: leave it be.
    const movedOn = () => this.model.sessionId !== sessionId || this.model.turns.length > 0;
    for (let attempt = 1; ; attempt++) {
      try {
        const messages = await this.history(sessionId);
        if (movedOn()) return;
        this.model = fromHistory(sessionId, messages);
        this.refresh(true, true);
        return;
      } catch (error) {
        const what = restoreFailure(error, attempt, RESTORE_ATTEMPTS);
        log(`Restoring session ${sessionId} (attempt ${attempt} of ${RESTORE_ATTEMPTS}) failed: ` +
            `${messageOf(error)}` + (what === "forget" ? "; the panel starts a new session"
              : what === "retry" ? "; trying again" : "; the session id is kept"));
        if (what === "forget") {
          if (!movedOn()) {
            this.model = emptyModel();
            void this.state.update(SESSION_KEY, undefined);
            this.refresh(true, true);
          }
          return;
        }
        if (what === "keep") {
          this.refresh(true);
          void vscode.window.showWarningMessage(
            `AgentLS could not show the last conversation (${messageOf(error)}). It is still ` +
            "stored: run “Developer: Reload Window” to try again, or “AgentLS: Show Log” for details.");
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 1000));
        if (movedOn()) return;
      }
    }
  }

  private async history(sessionId: string): Promise<HistoryMessage[]> {
    const client = this.client();
    if (!client?.isRunning()) throw new Error("the AgentLS server is not running");
    const answer = await client.sendRequest<{ messages: HistoryMessage[] }>(
      "agentls/history", { sessionId });
    return answer.messages;
  }

  /** Posts the view to the webview at most every 40 ms while text streams. */
  private refresh(now: boolean, reset = false): void {
    const post = () => {
      this.timer = undefined;
      this.lastPost = performance.now();
      this.panel.show(toView(this.model), reset);
    };
    if (now || reset || performance.now() - this.lastPost > 40) {
      if (this.timer) clearTimeout(this.timer);
      post();
    } else if (!this.timer) {
      this.timer = setTimeout(post, 40);
    }
  }
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
