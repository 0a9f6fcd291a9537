// The conversation log. The extension sends the whole view once (render), then operations
// (apply; src/pure/view.ts) that touch only what changed: streamed text is appended to its
// turn, never redrawn, so a selection in the panel survives streaming and a chunk costs the
// same at turn 1 and 200. A reopened session shows its latest page; the "Earlier turns"
// control at the top fetches the ones before.
import type { PanelOp, ViewModel, ViewTurn } from "../pure/view";
import { el, page, vscode } from "./dom";
import { renderPart, renderTurn, setFooter, setHead, setTail } from "./turns";

const { log, empty, send, cancel } = page;

let firstTextReported = new Set<number>();

/** A new conversation: its turns' first text is reported again. */
export function resetFirstText(): void {
  firstTextReported = new Set();
}

function reportFirstText(turnId: number): void {
  if (firstTextReported.has(turnId)) return;
  firstTextReported.add(turnId);
  vscode.postMessage({ type: "firstText", turn: turnId });
}

function drawTurn(turn: ViewTurn): HTMLElement {
  return renderTurn(turn, reportFirstText);
}

function section(turnId: number | string): HTMLElement | null {
  return log.querySelector(`section[data-turn="${turnId}"]`);
}

function setRunning(running: boolean, turns: number): void {
  cancel.hidden = !running;
  send.textContent = turns ? "Send follow-up" : "Send";
  empty.hidden = turns > 0;
  log.hidden = turns === 0;
}

function turnCount(): number {
  return log.querySelectorAll(":scope > section.turn").length;
}

function atBottom(): boolean {
  return log.scrollHeight - log.scrollTop - log.clientHeight < 40;
}

// Follow the conversation while the person is at its end; once they scroll up to read,
// stay where they are until they scroll back down.
let stick = true;

export function keepAtBottom(): void {
  if (stick) log.scrollTop = log.scrollHeight;
}

/** The "Earlier turns" control at the top of the log (null when there are none). */
function earlierControl(more: number, error?: string): HTMLElement | null {
  if (!more) return null;
  const row = el("div", "earlier");
  const button = el("button", "earlier-button secondary", `Earlier turns (${more} more)`);
  button.type = "button";
  button.title = "Show the turns before these (a page at a time)";
  row.append(button);
  if (error) row.append(el("div", "note error", error));
  return row;
}

function setEarlier(more: number, error?: string): void {
  log.querySelector(":scope > .earlier")?.remove();
  const control = earlierControl(more, error);
  if (control) log.prepend(control);
}

/** Earlier turns put above those drawn; what the person was looking at stays in place. */
function prependTurns(op: Extract<PanelOp, { op: "earlier" }>): void {
  const fromBottom = log.scrollHeight - log.scrollTop;
  const first = log.querySelector(":scope > section.turn");
  const nodes = document.createDocumentFragment();
  nodes.append(...op.turns.map(drawTurn));
  if (first) first.before(nodes);
  else log.append(nodes);
  setEarlier(op.more, op.error);
  log.scrollTop = log.scrollHeight - fromBottom;
  stick = atBottom();
  setRunning(!cancel.hidden, turnCount());
}

/** The whole view: tool calls the person had opened stay open. */
export function render(view: ViewModel): void {
  const open = new Set(Array.from(log.querySelectorAll("details[open]"))
    .map((d) => d.closest("section")?.dataset.turn + ":" +
      Array.prototype.indexOf.call(d.parentElement?.children ?? [], d)));
  log.replaceChildren(...view.turns.map(drawTurn));
  setEarlier(view.earlier ?? 0);
  for (const key of open) {
    const [turn, index] = key.split(":");
    const parts = section(turn)?.querySelector(":scope > .parts");
    parts?.children[Number(index)]?.setAttribute("open", "");
  }
  setRunning(view.running, view.turns.length);
  stick = true; // a conversation opened or started: its end
  keepAtBottom();
}

export function apply(op: PanelOp): void {
  if (op.op === "running") {
    setRunning(op.running, turnCount());
    return;
  }
  if (op.op === "earlier") {
    prependTurns(op);
    return;
  }
  if (op.op === "turn") {
    section(op.turn.id)?.remove();
    log.append(drawTurn(op.turn));
    setRunning(!cancel.hidden, turnCount());
    return;
  }
  const turn = section(op.turn);
  if (!turn) return;
  if (op.op === "footer") {
    setFooter(turn, op);
    return;
  }
  if (op.op === "head") {
    setHead(turn, op);
    return;
  }
  const parts = turn.querySelector(":scope > .parts") as HTMLElement;
  if (op.op === "part") {
    const node = renderPart(op.part);
    const old = parts.children[op.index];
    if (old) old.replaceWith(node);
    else parts.append(node);
    if (op.part.type === "md") reportFirstText(op.turn);
    return;
  }
  if (op.op === "md") {
    const answer = parts.children[op.index];
    if (!answer) return;
    if (op.append) answer.querySelector(":scope > .blocks")?.insertAdjacentHTML("beforeend", op.append);
    if (op.tail !== undefined) setTail(answer, op.tail);
    if (op.codeAppend) answer.querySelector(":scope > .tail code")?.append(op.codeAppend);
    reportFirstText(op.turn);
  }
}

/** The log's own controls: following the end, "Earlier turns", and the code blocks' Copy /
 * Insert / Apply. */
export function setupLog(): void {
  log.addEventListener("scroll", () => { stick = atBottom(); });
  log.addEventListener("click", (event) => {
    const button = (event.target as HTMLElement).closest("button.earlier-button");
    if (!(button instanceof HTMLButtonElement) || button.disabled) return;
    button.disabled = true;
    button.textContent = "Loading earlier turns…";
    button.parentElement?.querySelector(".note")?.remove();
    vscode.postMessage({ type: "earlier" });
  });
  log.addEventListener("click", (event) => {
    const button = (event.target as HTMLElement).closest("button.code-action");
    if (!(button instanceof HTMLButtonElement) || button.disabled) return;
    const block = button.closest(".code");
    const code = block?.querySelector("pre code")?.textContent ?? "";
    const lang = block?.querySelector(".lang")?.textContent ?? "";
    const action = button.dataset.action as "copy" | "insert" | "apply";
    vscode.postMessage({ type: "code", action, code, lang });
    if (action === "copy") {
      button.textContent = "Copied";
      setTimeout(() => { button.textContent = "Copy"; }, 1500);
    }
  });
}
