// One conversation in the panel: sends agentls/chat, folds agentls/chatEvent into the model,
// cancels, restores a session's history (agentls/turns).
import * as fs from "node:fs";
import * as vscode from "vscode";
import type { LanguageClient } from "vscode-languageclient/node";
import {
  applyEvent, applyResult, cancelRefused, type ChatEvent, type ChatResult, emptyModel, failTurn,
  fromTurns, type PanelModel, restoreFailure, running, startTurn, type Turn, type TurnRecord,
} from "./pure/model";
import { EarlierTurns } from "./pure/earlier";
import { type PanelOp, ViewSync } from "./pure/view";
import type { ChatPanel } from "./panel";
import type { StatusItem } from "./status";

const SESSION_KEY = "agentls.sessionId";
const RESTORE_ATTEMPTS = 3;
const HISTORY_PAGE = 200;

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
  private readonly sync = new ViewSync();
  private readonly dirty = new Set<Turn>();
  private flushing: NodeJS.Immediate | undefined;
  /** The first turn of a new session, until the server named the session: a second Send
   * waits for it, so it continues that session instead of starting its own. */
  private naming: { turn: Turn; named: Promise<void>; done: () => void } | undefined;
  /** Benchmark only: per turn, the extension's time for each streamed chunk. */
  private readonly chunkTimes = new Map<number, number[]>();
  private readonly timingsOn = Boolean(process.env.AGENTLS_VSCODE_TIMINGS);
  /** The conversation's options (src/conversation.ts): what a request carries for a new
   * session, and who is told when the panel's session changes. */
  options: { params(sessionId: string | undefined): Record<string, unknown>;
             sessionChanged(sessionId: string | undefined): void } | undefined;
  private shownSession: string | undefined | null = null;

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

  async send(prompt: string, context?: ChatContext, started = performance.now(),
             references: Record<string, unknown>[] = []): Promise<void> {
    const model = this.model;
    const turn = startTurn(model, prompt);
    this.timings.set(turn.id, { started });
    this.touch(turn);
    const earlier = this.naming;
    if (!model.sessionId && earlier) {
      turn.status = "waiting for the previous message to start its session…";
      this.touch(turn);
      await earlier.named;
      if (this.model !== model) return; // a new chat was started meanwhile
      turn.status = "starting…";
      this.touch(turn);
    }
    let named: (() => void) | undefined;
    if (!model.sessionId && !this.naming) {
      let done = () => undefined as void;
      const promise = new Promise<void>((resolve) => { done = resolve; });
      this.naming = { turn, named: promise, done };
      named = () => {
        if (this.naming?.turn === turn) this.naming = undefined;
        done();
      };
    }
    try {
      await this.run(model, turn, prompt, context, references);
    } finally {
      named?.();
    }
  }

  private async run(model: PanelModel, turn: Turn, prompt: string,
                    context: ChatContext | undefined,
                    references: Record<string, unknown>[]): Promise<void> {
    const client = this.client();
    if (!client?.isRunning()) {
      failTurn(turn, "The AgentLS server is not running: see “AgentLS: Show Log”, then run " +
        "“AgentLS: Restart Server”.");
      this.touch(turn);
      return;
    }
    this.status.set("running", "starting the run");
    const source = new vscode.CancellationTokenSource();
    this.cancels.set(turn.id, source);
    const params: Record<string, unknown> = { prompt };
    if (model.sessionId) params.sessionId = model.sessionId;
    if (context) params.context = context;
    if (references.length) params.references = references;
    Object.assign(params, this.options?.params(model.sessionId));
    try {
      const request = client.sendRequest<ChatResult>("agentls/chat", params, source.token);
      this.timings.get(turn.id)!.sent = performance.now();
      const result = await request;
      applyResult(model, turn, result);
    } catch (error) {
      if (source.token.isCancellationRequested) {
        applyResult(model, turn, { stopReason: "cancelled" });
      } else {
        failTurn(turn, `AgentLS could not run this request: ${messageOf(error)}`);
      }
    } finally {
      this.cancels.delete(turn.id);
      source.dispose();
    }
    this.sessionNamed(model);
    if (this.model !== model) return;
    void this.state.update(SESSION_KEY, model.sessionId);
    this.status.set(turn.state === "error" ? "error" : "idle",
                    turn.state === "error" ? "the last run failed" : "");
    this.touch(turn);
  }

  private sessionNamed(model: PanelModel): void {
    if (model.sessionId && this.naming && model === this.model) {
      const naming = this.naming;
      this.naming = undefined;
      naming.done();
    }
  }

  onEvent(event: ChatEvent): void {
    const turn = applyEvent(this.model, event);
    if (!turn) return;
    this.sessionNamed(this.model);
    if (event.kind === "text") {
      const timing = this.timings.get(turn.id);
      if (timing && timing.firstEvent === undefined) timing.firstEvent = performance.now();
    }
    if (turn.state === "running" && turn.status) this.status.set("running", turn.status);
    this.touch(turn);
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
    this.touch(turn);
    const client = this.client();
    if (turn.runId && client?.isRunning()) {
      try {
        const result = await client.sendRequest<{ cancelled?: boolean } | null>(
          "agentls/cancel", { runId: turn.runId });
        if (!result?.cancelled) {
          cancelRefused(turn, this.status.isReviewing());
          this.touch(turn);
        }
        return true;
      } catch (error) {
        turn.parts.push({ type: "note", level: "warning",
                          text: `Cancel failed: ${messageOf(error)}` });
        this.touch(turn);
      }
    }
    this.cancels.get(turn.id)?.cancel(); // not started yet (or the server is gone)
    return true;
  }

  newSession(): void {
    for (const source of this.cancels.values()) source.cancel();
    this.naming?.done();
    this.naming = undefined;
    this.model = emptyModel();
    void this.state.update(SESSION_KEY, undefined);
    this.redraw(true);
  }

  async openSession(sessionId: string): Promise<void> {
    const started = performance.now();
    this.model = await this.history(sessionId);
    const fetched = performance.now();
    void this.state.update(SESSION_KEY, sessionId);
    this.redraw(true);
    if (this.timingsOn) {
      this.opening = { requestMs: fetched - started, extensionMs: performance.now() - fetched,
                       turns: this.model.turns.length, total: this.historyTotal };
    }
  }

  /** Benchmark only: the last session opened, until the webview says it drew it. */
  private opening: Record<string, number> | undefined;
  private historyTotal = 0;

  /** The webview drew a whole view in `ms` (benchmark only). */
  viewDrawn(ms: number): void {
    if (!this.opening) return;
    recordTiming({ figure: "history_open", ...this.opening, webviewMs: ms });
    this.opening = undefined;
  }

  /** After start-up: the stored session's history, so a reload shows the conversation. A
   * session the server does not have is forgotten; any other failure is tried again
   * (RESTORE_ATTEMPTS, a second apart), then the id is kept and the person told. */
  async restore(log: (line: string) => void): Promise<void> {
    const sessionId = this.model.sessionId;
    if (!sessionId || this.model.turns.length > 0) {
      this.redraw(false);
      return;
    }
    // The person may start a turn (or a new session) while a request is out: leave it be.
    const movedOn = () => this.model.sessionId !== sessionId || this.model.turns.length > 0;
    for (let attempt = 1; ; attempt++) {
      try {
        const stored = await this.history(sessionId);
        if (movedOn()) return;
        this.model = stored;
        this.redraw(true);
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
            this.redraw(true);
          }
          return;
        }
        if (what === "keep") {
          this.redraw(false);
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

  /** A stored session as the server shows it: agentls/turns, display-ready (the person's
   * words, chips, notes, tool calls with their summaries, the model that answered), the
   * latest HISTORY_PAGE turns; the earlier ones come a page at a time (showEarlier). */
  private async history(sessionId: string): Promise<PanelModel> {
    const page = await this.turnsPage(sessionId);
    this.historyTotal = page.total;
    return fromTurns(sessionId, page.turns, page.start);
  }

  private async turnsPage(sessionId: string, before?: number):
      Promise<{ turns: TurnRecord[]; start: number; total: number }> {
    const client = this.client();
    if (!client?.isRunning()) throw new Error("the AgentLS server is not running");
    const params: Record<string, unknown> = { sessionId, limit: HISTORY_PAGE };
    if (before !== undefined) params.before = before;
    return client.sendRequest("agentls/turns", params);
  }

  private readonly earlierTurns = new EarlierTurns();

  /** The panel's "Earlier turns" control: the page before the turns shown, put above them
   * (only those are drawn; the webview keeps the scroll position); a failed fetch gives the
   * control back with the reason. */
  async showEarlier(): Promise<void> {
    const model = this.model;
    const op = await this.earlierTurns.click(model, this.sync, async (before) => {
      if (!model.sessionId) throw new Error("the conversation has no session");
      return this.turnsPage(model.sessionId, before);
    }, () => this.model);
    if (op) this.panel.apply([op]);
  }

  /** The whole conversation, drawn afresh (a new webview, a new or reopened session). */
  redraw(reset: boolean): void {
    this.dirty.clear();
    const view = this.sync.full(this.model);
    this.runningContext(view.running);
    this.sessionShown();
    this.panel.show(view, reset, this.timingsOn);
  }

  private shownRunning: boolean | undefined;

  /** `agentls.running` for the title bar's Cancel and the Cancel key. */
  private runningContext(running: boolean): void {
    if (running === this.shownRunning) return;
    this.shownRunning = running;
    void vscode.commands.executeCommand("setContext", "agentls.running", running);
  }

  /** The webview's time per streamed chunk (benchmark only), joined with the extension's. */
  chunkTimesShown(turnId: number, panelMs: number[]): void {
    const extension = this.chunkTimes.get(turnId) ?? [];
    this.chunkTimes.delete(turnId);
    recordTiming({ figure: "chunks", turns: this.model.turns.length, extensionMs: extension,
                   panelMs });
  }

  /** The turn changed: the webview gets the operations that bring it up to date, once per
   * burst of events (setImmediate), each costing what changed, not what came before. */
  private sessionShown(): void {
    if (this.shownSession === this.model.sessionId) return;
    this.shownSession = this.model.sessionId;
    this.options?.sessionChanged(this.model.sessionId);
  }

  private touch(turn: Turn): void {
    if (!this.model.turns.includes(turn)) return; // a conversation no longer shown
    this.dirty.add(turn);
    this.flushing ??= setImmediate(() => this.flush());
  }

  private flush(): void {
    this.flushing = undefined;
    const started = this.timingsOn ? performance.now() : 0;
    const ops: PanelOp[] = [];
    for (const turn of this.dirty) ops.push(...this.sync.changes(this.model, turn));
    this.dirty.clear();
    if (!ops.length) return;
    for (const op of ops) if (op.op === "running") this.runningContext(op.running);
    this.sessionShown();
    this.panel.apply(ops);
    if (this.timingsOn) {
      const md = ops.find((op) => op.op === "md");
      if (md && md.op === "md") {
        const list = this.chunkTimes.get(md.turn) ?? [];
        list.push(performance.now() - started);
        this.chunkTimes.set(md.turn, list);
      }
    }
  }
}

export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
