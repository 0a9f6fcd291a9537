// Mentions: @ or # in the input, completed from the server (agentls/mentions through the
// extension); the ones picked go with the prompt as references.
import { el, page, vscode } from "./dom";
import { mentionBefore } from "./text";

export interface MentionItem {
  label: string;
  detail?: string;
  text?: string; // what to insert, when the server says
  reference: Record<string, unknown>;
}

const { input, mentionList } = page;

/** Mention text in the input -> the reference it stands for. */
const picked = new Map<string, Record<string, unknown>>();
let mentionRequest = 0;
let mentionItems: MentionItem[] = [];
let mentionIndex = 0;
let mentionAt = -1; // where the trigger character is in the input
let mentionTimer: ReturnType<typeof setTimeout> | undefined;

function mentionBeforeCaret() {
  return mentionBefore(input.value, input.selectionStart ?? input.value.length);
}

/** The references of the mentions picked and still in `prompt`; the picks are forgotten. */
export function takeReferences(prompt: string): Record<string, unknown>[] {
  const references = [];
  for (const [text, reference] of picked) if (prompt.includes(text)) references.push(reference);
  picked.clear();
  return references;
}

/** The extension's answer to mention request `id`; an answer to an older one is dropped. */
export function mentionItemsArrived(id: number, items: MentionItem[]): void {
  if (id === mentionRequest) showMentions(items);
}

function showMentions(items: MentionItem[]): void {
  mentionItems = items.slice(0, 12);
  if (!mentionItems.length || mentionAt < 0) {
    closeMentions();
    return;
  }
  mentionList.replaceChildren(...mentionItems.map((item, i) => {
    const row = el("div", "mention");
    row.setAttribute("role", "option");
    row.id = "mention-" + i;
    row.append(el("span", "mention-label", item.label), el("span", "mention-detail", item.detail || ""));
    row.addEventListener("mousedown", (event) => {
      event.preventDefault(); // keep the focus in the input
      acceptMention(i);
    });
    return row;
  }));
  mentionList.hidden = false;
  selectMention(0);
}

function selectMention(index: number): void {
  mentionIndex = index;
  Array.from(mentionList.children).forEach((row, i) => {
    row.classList.toggle("selected", i === index);
    row.setAttribute("aria-selected", String(i === index));
  });
  input.setAttribute("aria-activedescendant", "mention-" + index);
  mentionList.children[index]?.scrollIntoView({ block: "nearest" });
}

function acceptMention(index: number): void {
  const item = mentionItems[index];
  const found = mentionBeforeCaret();
  if (!item || !found) return closeMentions();
  const text = item.text || found.trigger + item.label; // the server says what to insert
  const caret = input.selectionStart ?? input.value.length;
  input.value = input.value.slice(0, found.at) + text + " " + input.value.slice(caret);
  const after = found.at + text.length + 1;
  input.setSelectionRange(after, after);
  picked.set(text, item.reference);
  closeMentions();
}

export function closeMentions(): void {
  mentionList.hidden = true;
  mentionList.replaceChildren();
  mentionItems = [];
  mentionAt = -1;
  input.removeAttribute("aria-activedescendant");
}

/** A key in the input while the list is open: moves, picks or closes; true when it was. */
export function mentionKey(event: KeyboardEvent): boolean {
  if (mentionList.hidden || !mentionItems.length) return false;
  if (event.key === "ArrowDown" || event.key === "ArrowUp") {
    event.preventDefault();
    const step = event.key === "ArrowDown" ? 1 : -1;
    selectMention((mentionIndex + step + mentionItems.length) % mentionItems.length);
    return true;
  }
  if ((event.key === "Enter" || event.key === "Tab") && !event.isComposing) {
    event.preventDefault();
    acceptMention(mentionIndex);
    return true;
  }
  if (event.key === "Escape") {
    event.preventDefault();
    closeMentions();
    return true;
  }
  return false;
}

/** Typing asks for items (60 ms after the last key); leaving the input closes the list. */
export function setupMentions(): void {
  input.addEventListener("input", () => {
    const found = mentionBeforeCaret();
    clearTimeout(mentionTimer);
    if (!found) {
      closeMentions();
      return;
    }
    mentionAt = found.at;
    mentionTimer = setTimeout(() => {
      vscode.postMessage({ type: "mentions", id: ++mentionRequest, trigger: found.trigger,
                           query: found.query });
    }, 60);
  });
  input.addEventListener("blur", () => setTimeout(closeMentions, 150));
}
