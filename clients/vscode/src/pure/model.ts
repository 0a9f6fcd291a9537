// The chat panel's model: agentls/chatEvent notifications, chat results and stored history
// folded into turns (pure: no vscode import, so node:test covers it).

export interface ChatEvent {
  sessionId: string;
  runId: string;
  seq: number;
  kind: string;
  [key: string]: unknown;
}

export interface FileChange {
  uri?: string;
  path?: string;
  kind?: string;
  insertions?: number;
  deletions?: number;
}

export interface ChatResult {
  sessionId?: string;
  runId?: string;
  text?: string;
  stopReason?: string;
  changes?: FileChange[];
  applied?: boolean | null;
  failureReason?: string;
  error?: { message?: string; kind?: string; hint?: string };
}

export type Part =
  | { type: "text"; text: string }
  | { type: "tool"; callId: string; name: string; arguments: string; ok?: boolean;
      summary?: string }
  | { type: "note"; level: "info" | "warning" | "error"; text: string };

export type TurnState = "running" | "done" | "cancelled" | "error";

export interface Turn {
  id: number;
  runId?: string;
  prompt: string;
  parts: Part[];
  status: string;
  state: TurnState;
  /** What became of the agent's edit: shown under the answer. */
  editOutcome?: string;
  lastSeq: number;
}

export interface PanelModel {
  sessionId?: string;
  turns: Turn[];
  nextId: number;
}

export function emptyModel(sessionId?: string): PanelModel {
  return { sessionId, turns: [], nextId: 1 };
}

export function running(model: PanelModel): Turn | undefined {
  return model.turns.find((t) => t.state === "running");
}

export function startTurn(model: PanelModel, prompt: string): Turn {
  const turn: Turn = { id: model.nextId++, prompt, parts: [], status: "starting…",
                       state: "running", lastSeq: 0 };
  model.turns.push(turn);
  return turn;
}

function turnFor(model: PanelModel, event: ChatEvent): Turn | undefined {
  const known = model.turns.find((t) => t.runId === event.runId);
  if (known) return known;
  // The first event of a run tells its id: it belongs to the oldest running turn without one.
  const waiting = model.turns.find((t) => t.state === "running" && t.runId === undefined);
  if (waiting) waiting.runId = event.runId;
  return waiting;
}

function str(value: unknown): string {
  return typeof value === "string" ? value : value === undefined || value === null ? "" :
    JSON.stringify(value);
}

function addText(turn: Turn, text: string): void {
  const last = turn.parts[turn.parts.length - 1];
  if (last && last.type === "text") last.text += text;
  else turn.parts.push({ type: "text", text });
}

export function describeFiles(files: FileChange[]): string {
  return files.map((f) => {
    const where = f.path ?? f.uri ?? "?";
    const name = where.replace(/^file:\/\//, "").split("/").pop() ?? where;
    const counts = f.insertions !== undefined ? ` (+${f.insertions} −${f.deletions ?? 0})` : "";
    return `${name}${counts}`;
  }).join(", ");
}

/** Folds one notification into the model; returns the turn it touched (undefined: ignored,
 * e.g. a late or repeated event). */
export function applyEvent(model: PanelModel, event: ChatEvent): Turn | undefined {
  const turn = turnFor(model, event);
  if (!turn || event.seq <= turn.lastSeq) return undefined;
  turn.lastSeq = event.seq;
  model.sessionId = event.sessionId || model.sessionId;
  switch (event.kind) {
    case "text":
      addText(turn, str(event.text));
      turn.status = "answering…";
      break;
    case "toolCall":
      turn.parts.push({ type: "tool", callId: str(event.callId), name: str(event.name),
                        arguments: str(event.arguments) });
      turn.status = `running ${str(event.name)}…`;
      break;
    case "toolResult": {
      const call = turn.parts.find((p) => p.type === "tool" && p.callId === str(event.callId));
      if (call && call.type === "tool") {
        call.ok = event.ok !== false;
        call.summary = str(event.summary);
      }
      break;
    }
    case "status":
      turn.status = str(event.message);
      break;
    case "retry":
      turn.parts.push({ type: "note", level: "warning", text: str(event.text) });
      break;
    case "edit": {
      const files = Array.isArray(event.files) ? (event.files as FileChange[]) : [];
      turn.editOutcome = `Edit proposed: ${describeFiles(files)} — review it in the refactor ` +
        "preview: tick the changes to keep (the file's box ticks all), then Apply, or Discard.";
      turn.status = "waiting for your review in the refactor preview…";
      break;
    }
    case "error": {
      const hint = str(event.hint);
      turn.parts.push({ type: "note", level: "error",
                        text: str(event.message) + (hint ? ` — ${hint}` : "") });
      break;
    }
    case "done":
      finish(turn, str(event.stopReason) || "done");
      break;
    default:
      break;
  }
  return turn;
}

function finish(turn: Turn, stopReason: string): void {
  if (turn.state !== "running") return;
  turn.state = stopReason === "cancelled" ? "cancelled" :
    stopReason === "error" ? "error" : "done";
  turn.status = stopReason === "done" ? "" : stopReason.replace(/_/g, " ");
}

/** The agentls/chat response: the truth about the edit and how the run ended. */
export function applyResult(model: PanelModel, turn: Turn, result: ChatResult): void {
  if (result.sessionId) model.sessionId = result.sessionId;
  if (result.runId && !turn.runId) turn.runId = result.runId;
  if (turn.parts.every((p) => p.type !== "text") && result.text) addText(turn, result.text);
  if (result.error?.message && !turn.parts.some((p) => p.type === "note" && p.level === "error")) {
    const hint = result.error.hint ? ` — ${result.error.hint}` : "";
    turn.parts.push({ type: "note", level: "error", text: result.error.message + hint });
  }
  const files = result.changes ?? [];
  if (result.applied === true) {
    turn.editOutcome = `Edit applied: ${describeFiles(files)}.`;
  } else if (result.applied === false) {
    const why = result.failureReason ? ` (${result.failureReason})` : "";
    turn.editOutcome = `Edit not applied${why}: ${describeFiles(files)} left unchanged.`;
  } else if (turn.editOutcome?.startsWith("Edit proposed")) {
    turn.editOutcome = undefined;
  }
  finish(turn, result.stopReason ?? "done");
}

/** A request that failed outright (refused, server gone): the turn ends with the reason. */
export function failTurn(turn: Turn, message: string): void {
  turn.parts.push({ type: "note", level: "error", text: message });
  turn.state = "error";
  turn.status = "";
}

export interface HistoryMessage {
  kind?: string;
  role?: string;
  content?: string | null;
  toolCalls?: { id?: string; name?: string; arguments?: string }[];
  toolCallId?: string;
  toolName?: string;
  metadata?: Record<string, unknown>;
  /** User messages: what the server told the model first (a rejected edit…), as data. */
  notes?: string[];
}

/** A stored session (agentls/history) as turns: user messages start turns, assistant text and
 * tool calls fill them, tool results complete the calls. System messages are not shown. */
export function fromHistory(sessionId: string, messages: HistoryMessage[]): PanelModel {
  const model = emptyModel(sessionId);
  let turn: Turn | undefined;
  for (const m of messages) {
    if ((m.kind ?? "message") !== "message") continue;
    if (m.role === "user") {
      turn = startTurn(model, m.content ?? "");
      turn.state = "done";
      turn.status = "";
      for (const text of m.notes ?? []) turn.parts.push({ type: "note", level: "info", text });
    } else if (turn && m.role === "assistant") {
      if (m.content) addText(turn, (turn.parts.length ? "\n\n" : "") + m.content);
      for (const call of m.toolCalls ?? []) {
        turn.parts.push({ type: "tool", callId: call.id ?? "", name: call.name ?? "",
                          arguments: call.arguments ?? "" });
      }
    } else if (turn && m.role === "tool") {
      const call = turn.parts.find((p) => p.type === "tool" && p.callId === m.toolCallId);
      if (call && call.type === "tool") Object.assign(call, toolOutcome(m.content ?? ""));
    }
  }
  return model;
}

/** JSON-RPC InvalidParams: what the server answers agentls/history for a session it does not
 * have (deleted, or another workspace's). Any other failure is worth another try. */
const INVALID_PARAMS = -32602;

/** After a failed agentls/history at start-up: forget the stored session id only when the
 * server says the session does not exist; otherwise try again, then keep the id. */
export function restoreFailure(error: unknown, attempt: number, attempts: number):
    "forget" | "retry" | "keep" {
  const code = typeof error === "object" && error !== null ? (error as { code?: unknown }).code : undefined;
  if (code === INVALID_PARAMS) return "forget";
  return attempt < attempts ? "retry" : "keep";
}

/** A stored tool result (usually the tool's JSON answer) as ok + a one-line summary. */
function toolOutcome(content: string): { ok: boolean; summary: string } {
  try {
    const data = JSON.parse(content) as Record<string, unknown>;
    if (data && typeof data === "object" && "ok" in data) {
      const ok = data.ok !== false;
      const detail = ok ? "" : String(data.error ?? data.message ?? "");
      return { ok, summary: firstLine(ok ? "ok" : `failed${detail ? `: ${detail}` : ""}`) };
    }
  } catch {
    // plain text
  }
  return { ok: true, summary: firstLine(content) };
}

function firstLine(text: string): string {
  const line = text.split("\n", 1)[0] ?? "";
  return line.length > 120 ? `${line.slice(0, 117)}…` : line;
}
