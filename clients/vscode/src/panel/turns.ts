// One turn as the panel draws it: the prompt, the chips under it, its parts (rendered
// markdown with a streaming tail, folded tool calls, notes) and its footer. Untrusted text is
// set with textContent; the only innerHTML is markdown the extension rendered with raw HTML
// disabled and code highlighted by highlight.js (src/pure/markdown.ts).
import type { Chip, Refused } from "../pure/model";
import type { Tail } from "../pure/stream";
import type { ViewPart, ViewTurn } from "../pure/view";
import { el } from "./dom";
import { editOutcomeClass, formatSize } from "./text";

/** The bar above a code block: its language and Copy / Insert / Apply. */
function codeHead(lang: string): HTMLElement {
  const head = el("div", "code-head");
  head.append(el("span", "lang", lang || "text"));
  const actions = el("span", "code-actions");
  for (const [action, label] of [["copy", "Copy"], ["insert", "Insert"], ["apply", "Apply"]]) {
    const button = el("button", "code-action", label);
    button.dataset.action = action;
    button.disabled = true; // until the block is complete
    actions.append(button);
  }
  head.append(actions);
  return head;
}

/** The unfinished end of an answer: HTML, or a code block still streaming. */
export function setTail(answer: Element, tail: Tail | null): void {
  const node = answer.querySelector(":scope > .tail") as HTMLElement;
  if (!tail) {
    node.textContent = "";
    return;
  }
  if (tail.kind === "html") {
    node.innerHTML = tail.html;
    return;
  }
  const block = el("div", "code streaming");
  const code = el("code", undefined, tail.code);
  const pre = el("pre");
  pre.append(code);
  block.append(codeHead(tail.lang), pre);
  node.replaceChildren(block);
}

export function renderPart(part: ViewPart): HTMLElement {
  if (part.type === "md") {
    const div = el("div", "answer");
    const blocks = el("div", "blocks");
    blocks.innerHTML = part.html;
    div.append(blocks, el("div", "tail"));
    setTail(div, part.tail);
    return div;
  }
  if (part.type === "tool") {
    const details = el("details", "tool");
    const state = part.ok === undefined ? "running" : part.ok ? "ok" : "failed";
    details.classList.add(state);
    const summary = el("summary");
    summary.append(el("span", "tool-icon", part.ok === undefined ? "⋯" : part.ok ? "✓" : "✗"));
    summary.append(el("span", "tool-name", part.name));
    if (part.summary) summary.append(el("span", "tool-summary", part.summary));
    details.append(summary, el("pre", "tool-args", part.arguments));
    return details;
  }
  return el("div", "note " + part.level, part.text);
}

interface Footer {
  state: string;
  status: string;
  editOutcome?: string;
  answeredBy?: string;
}

/** The turn's state, its edit's outcome, its status line and which model answered. */
export function setFooter(section: HTMLElement, turn: Footer): void {
  section.className = "turn " + turn.state;
  let outcome = section.querySelector(":scope > .edit-outcome");
  if (turn.editOutcome) {
    if (!outcome) {
      outcome = el("div");
      section.querySelector(":scope > .status")!.before(outcome);
    }
    outcome.className = "edit-outcome " + editOutcomeClass(turn.editOutcome);
    outcome.textContent = turn.editOutcome;
  } else if (outcome) {
    outcome.remove();
  }
  const status = section.querySelector(":scope > .status") as HTMLElement;
  status.textContent = turn.status;
  status.hidden = !turn.status;
  let answered = section.querySelector(":scope > .answered-by");
  if (turn.answeredBy) {
    if (!answered) {
      answered = el("div", "answered-by");
      section.append(answered);
    }
    answered.textContent = turn.answeredBy;
  } else if (answered) {
    answered.remove();
  }
}

/** What was attached to the turn (chips) and what was refused, under the prompt. */
export function setHead(section: HTMLElement, head: { chips?: Chip[]; refused?: Refused[] }): void {
  section.querySelector(":scope > .chips")?.remove();
  const chips = head.chips ?? [];
  const refused = head.refused ?? [];
  if (!chips.length && !refused.length) return;
  const row = el("div", "chips");
  for (const chip of chips) {
    const facts = [chip.range ? "lines " + chip.range : chip.lines ? chip.lines + " lines" : "",
                   chip.size !== undefined ? formatSize(chip.size) : ""].filter(Boolean).join(" · ");
    const node = el("span", "chip " + (chip.kind || "file"));
    node.append(el("span", "chip-kind", chip.kind || "file"), el("span", "chip-name", chip.name));
    if (facts) node.append(el("span", "chip-facts", facts));
    node.title = [chip.name, facts, chip.note].filter(Boolean).join(" — ");
    if (chip.note) node.classList.add("trimmed");
    row.append(node);
  }
  for (const item of refused) {
    const node = el("span", "chip refused");
    node.append(el("span", "chip-kind", "not attached"), el("span", "chip-name", item.name));
    node.title = item.reason;
    row.append(node);
    row.append(el("span", "refused-reason", item.reason));
  }
  section.querySelector(":scope > .prompt")!.after(row);
}

/** A whole turn; `onText` is told when it has answer text (the first-text timing). */
export function renderTurn(turn: ViewTurn, onText: (turnId: number) => void): HTMLElement {
  const section = el("section", "turn " + turn.state);
  section.dataset.turn = String(turn.id);
  section.append(el("div", "prompt", turn.prompt));
  setHead(section, turn);
  const parts = el("div", "parts");
  for (const part of turn.parts) parts.append(renderPart(part));
  section.append(parts, el("div", "status"));
  setFooter(section, turn);
  if (turn.parts.some((p) => p.type === "md")) onText(turn.id);
  return section;
}
