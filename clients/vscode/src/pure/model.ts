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
  partial?: boolean; // some of the edit was kept: failureReason says what
  error?: { message?: string; kind?: string; hint?: string };
}

export type Part =
  | { type: "text"; text: string }
  | { type: "tool"; callId: string; name: string; arguments: string; ok?: boolean;
      summary?: string }
  | { type: "note"; level: "info" | "warning" | "error"; text: string };

export type TurnState = "running" | "done" | "cancelled" | "error";

/** What the server attached for a reference (`@file`, `#selection`…): a chip on the turn. */
export interface Chip {
  kind: string;
  name: string;
  lines?: number;
  size?: number;
  range?: string;
  note?: string;
}

export interface Refused {
  kind: string;
  name: string;
  reason: string;
}

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
  chips?: Chip[];
  refused?: Refused[];
  /** The model (and mode) that answered, as the server said. */
  answeredBy?: string;
}

export interface PanelModel {
  sessionId?: string;
  turns: Turn[];
  nextId: number;
  /** Stored turns before the first one shown (a reopened session is shown a page at a
   * time, the latest first): the index to ask agentls/turns for the page before. */
  earlier: number;
}

export function emptyModel(sessionId?: string): PanelModel {
  return { sessionId, turns: [], nextId: 1, earlier: 0 };
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

/** "gpt-4o · edit": the model that answered and the mode it ran in. */
export function answeredBy(model: string, mode: string): string | undefined {
  return [model, mode].filter(Boolean).join(" · ") || undefined;
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
    case "turn": {
      turn.chips = Array.isArray(event.attachments) ? (event.attachments as Chip[]) : [];
      turn.refused = Array.isArray(event.refused) ? (event.refused as Refused[]) : [];
      for (const note of Array.isArray(event.notes) ? event.notes : []) {
        turn.parts.push({ type: "note", level: "info", text: str(note) });
      }
      turn.answeredBy = answeredBy(str(event.model), str(event.mode));
      break;
    }
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
      turn.editOutcome = `Edit proposed: ${describeFiles(files)} — waiting for your review.`;
      turn.status = "waiting for your review…";
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
  } else if (result.applied === false && result.partial) {
    turn.editOutcome = `Edit partly applied: ${result.failureReason ?? "some of it was kept"}.`;
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

/** Cancel asked, and the server answered `cancelled: false`: the run goes on, so the turn
 * says why instead of a "cancelling…" that would never end. While its edit waits for the
 * person's review the server does not stop it (the edit is out); the turn ends with the review. */
export function cancelRefused(turn: Turn, reviewing: boolean): void {
  if (turn.state !== "running") return; // it ended meanwhile: its outcome says the rest
  const why = reviewing
    ? "its edit is waiting for your review; the turn ends with it (keep or discard it in the review)"
    : "its edit was already delivered, or it had finished; the turn ends in a moment";
  turn.parts.push({ type: "note", level: "info", text: `Not stopped: ${why}` });
  turn.status = reviewing ? "waiting for your review" : "finishing";
}

/** One turn as the server's display-ready history gives it (agentls/turns). */
export interface TurnRecord {
  index?: number;
  runId?: string | null;
  user?: { text?: string; attachments?: Chip[]; refused?: Refused[]; notes?: string[];
           trimmed?: string[] };
  model?: string | null;
  mode?: string | null;
  steps?: ({ kind: "text"; text?: string } |
           { kind: "toolCall"; id?: string; name?: string; arguments?: string; ok?: boolean | null;
             summary?: string })[];
  changes?: { text?: string; applied?: boolean | null };
  outcome?: string | null;
  durationMs?: number | null;
}

/** How long a stored turn took, as shown beside its model: "" when it was not measured (no
 * duration, or none above zero: a turn stored without its end time must not read "0.0 s" as
 * if timed); under a tenth of a second it says so rather than rounding to zero. */
export function took(durationMs: number | null | undefined): string {
  if (typeof durationMs !== "number" || !Number.isFinite(durationMs) || durationMs <= 0) return "";
  return durationMs < 100 ? "under 0.1 s" : `${(durationMs / 1000).toFixed(1)} s`;
}

/** One stored turn (agentls/turns) as a panel turn: each record is drawn as it is, nothing
 * re-derived (the server says what the person wrote, what was attached, the notes, each tool
 * call's summary, the edit's fate and the model that answered). */
function turnOf(id: number, record: TurnRecord): Turn {
  const user = record.user ?? {};
  const turn: Turn = { id, prompt: user.text ?? "", parts: [], status: "", state: "done",
                       lastSeq: 0, chips: user.attachments ?? [], refused: user.refused ?? [] };
  for (const text of [...(user.notes ?? []), ...(user.trimmed ?? [])]) {
    turn.parts.push({ type: "note", level: "info", text });
  }
  for (const step of record.steps ?? []) {
    if (step.kind === "text") {
      if (step.text) turn.parts.push({ type: "text", text: step.text });
    } else {
      turn.parts.push({ type: "tool", callId: step.id ?? "", name: step.name ?? "",
                        arguments: step.arguments ?? "",
                        ok: step.ok === null || step.ok === undefined ? undefined : step.ok,
                        summary: step.summary || undefined });
    }
  }
  const changes = record.changes;
  if (changes?.text) {
    turn.editOutcome = changes.applied === true ? `Edit applied: ${changes.text}.`
      : changes.applied === false ? `Edit not applied: ${changes.text}.`
        : `Edit not sent: ${changes.text}.`;
  }
  const outcome = record.outcome ?? "done";
  turn.state = outcome === "cancelled" ? "cancelled" : outcome === "error" ? "error" : "done";
  turn.status = outcome === "done" ? "" : outcome.replace(/_/g, " ");
  turn.answeredBy = [record.model, record.mode, took(record.durationMs)].filter(Boolean)
    .join(" · ") || undefined;
  return turn;
}

/** A stored session as the panel's turns: the page agentls/turns returned (`start`: the index
 * of its first turn, i.e. how many earlier turns are stored and not shown). */
export function fromTurns(sessionId: string, records: TurnRecord[], start = 0): PanelModel {
  const model = emptyModel(sessionId);
  for (const record of records) model.turns.push(turnOf(model.nextId++, record));
  model.earlier = Math.max(0, start);
  return model;
}

/** The page before the turns shown (agentls/turns with `before`), put above them; returns the
 * new turns, oldest first. The turns already shown are left as they are. */
export function prependTurns(model: PanelModel, records: TurnRecord[], start: number): Turn[] {
  const added = records.map((record) => turnOf(model.nextId++, record));
  model.turns.unshift(...added);
  model.earlier = Math.max(0, start);
  return added;
}

/** JSON-RPC InvalidParams: what the server answers agentls/turns for a session it does not
 * have (deleted, or another workspace's). Any other failure is worth another try. */
const INVALID_PARAMS = -32602;

/** After a failed agentls/turns at start-up: forget the stored session id only when the
 * server says the session does not exist; otherwise try again, then keep the id. */
export function restoreFailure(error: unknown, attempt: number, attempts: number):
    "forget" | "retry" | "keep" {
  const code = typeof error === "object" && error !== null ? (error as { code?: unknown }).code : undefined;
  if (code === INVALID_PARAMS) return "forget";
  return attempt < attempts ? "retry" : "keep";
}
