// AgentLS chat panel (webview), bundled by esbuild.mjs into dist/panel.js and loaded with a
// nonce under a strict CSP (src/panel.ts). The parts: dom.ts (the page, the channel),
// turns.ts (drawing a turn), log.ts (the conversation: whole view, then operations),
// header.ts (model and mode), mentions.ts (@ / # completion), input.ts (the prompt box),
// text.ts (small text rules). This file answers the extension's messages.
import type { PanelOp, ViewModel } from "../pure/view";
import { page, vscode } from "./dom";
import { setupHeader, showOptions, type Options } from "./header";
import { setupInput } from "./input";
import { apply, keepAtBottom, render, resetFirstText, setupLog } from "./log";
import { mentionItemsArrived, setupMentions, type MentionItem } from "./mentions";

/** What the extension sends the webview (src/panel.ts). */
type HostMessage =
  | { type: "view"; view: ViewModel; reset: boolean; timings: boolean }
  | { type: "ops"; ops: PanelOp[] }
  | { type: "options"; options: Options | null }
  | { type: "mentionItems"; id: number; items: MentionItem[] }
  | { type: "focusInput" }
  | { type: "setInput"; text: string };

let timings = false;
/** Per turn: ms spent on each "ops" message (timings only). */
const chunkTimes = new Map<number, number[]>();

/** Benchmark only (AGENTLS_VSCODE_TIMINGS): the time each streamed chunk took here. */
function recordChunk(ops: PanelOp[], ms: number): void {
  for (const op of ops) {
    if (op.op === "md") {
      const list = chunkTimes.get(op.turn) ?? [];
      list.push(ms);
      chunkTimes.set(op.turn, list);
      break;
    }
  }
  for (const op of ops) {
    if (op.op === "footer" && op.state !== "running" && chunkTimes.has(op.turn)) {
      vscode.postMessage({ type: "chunkTimes", turn: op.turn, ms: chunkTimes.get(op.turn)! });
      chunkTimes.delete(op.turn);
    }
  }
}

function onMessage(message: HostMessage | undefined): void {
  if (!message) return;
  if (message.type === "view") {
    if (message.reset) resetFirstText();
    timings = Boolean(message.timings);
    const started = performance.now();
    render(message.view);
    if (timings) {
      void page.log.offsetHeight; // the layout, as a person waits for it
      vscode.postMessage({ type: "drawn", ms: performance.now() - started });
    }
  } else if (message.type === "ops") {
    const started = performance.now();
    for (const op of message.ops) apply(op);
    keepAtBottom();
    if (timings) recordChunk(message.ops, performance.now() - started);
  } else if (message.type === "options") {
    showOptions(message.options);
  } else if (message.type === "mentionItems") {
    mentionItemsArrived(message.id, message.items);
  } else if (message.type === "focusInput") {
    page.input.focus();
  } else if (message.type === "setInput") {
    page.input.value = message.text;
    page.input.focus();
  }
}

setupLog();
window.addEventListener("message", (event: MessageEvent<HostMessage | undefined>) => onMessage(event.data));
setupInput();
setupHeader();
setupMentions();
vscode.postMessage({ type: "ready" });
