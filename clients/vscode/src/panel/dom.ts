// The webview page: its elements (src/panel.ts writes the HTML), the channel to the
// extension, and the one helper every part builds nodes with.
import type { PanelMessage } from "../panel";

interface VsCodeApi {
  postMessage(message: PanelMessage): void;
}

declare function acquireVsCodeApi(): VsCodeApi;

/** The channel to the extension: acquireVsCodeApi may be called once per page. */
export const vscode: VsCodeApi = acquireVsCodeApi();

function byId<T extends HTMLElement>(id: string): T {
  return document.getElementById(id) as T;
}

export const page = {
  log: byId<HTMLElement>("log"),
  empty: byId<HTMLElement>("empty"),
  form: byId<HTMLFormElement>("ask"),
  input: byId<HTMLTextAreaElement>("prompt"),
  send: byId<HTMLButtonElement>("send"),
  cancel: byId<HTMLButtonElement>("cancel"),
  header: byId<HTMLElement>("header"),
  modelButton: byId<HTMLButtonElement>("model"),
  modeSelect: byId<HTMLSelectElement>("mode"),
  mentionList: byId<HTMLElement>("mentions"),
};

/** A new element; `text` is set with textContent (never parsed). */
export function el<K extends keyof HTMLElementTagNameMap>(tag: K, cls?: string,
                                                          text?: string): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}
