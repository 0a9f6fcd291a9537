// Next-edit suggestions as the editor draws them (pure: no vscode import). The server's
// answer (agentls/nextEdit, the same as textDocument/copilotInlineEdit) is
// `{edits: [{text, textDocument: {uri, version}, range, command}]}` with at most one edit.

export interface WirePosition { line: number; character: number }
export interface WireRange { start: WirePosition; end: WirePosition }
export interface WireCommand { title?: string; command: string; arguments?: unknown[] }

export interface WireEdit {
  text: string;
  textDocument: { uri: string; version: number | null };
  range: WireRange;
  command?: WireCommand;
}

export type NextEditStatus = "idle" | "waiting" | "off" | "error";

/** The one edit of an answer, or undefined (no edit, or not the shape expected). */
export function firstEdit(result: unknown): WireEdit | undefined {
  const edits = (result as { edits?: unknown } | null)?.edits;
  if (!Array.isArray(edits) || edits.length === 0) return undefined;
  const edit = edits[0] as WireEdit;
  if (typeof edit?.text !== "string" || !edit.range?.start || !edit.range?.end) return undefined;
  return edit;
}

/** What is drawn: whether text is struck out, the new text's first line (after the range,
 * inline) and how many more lines it has (said in the same label: decorations hold one line). */
export interface Drawn { strikes: boolean; label: string; moreLines: number; full: string }

export function drawnOf(edit: WireEdit): Drawn {
  const { start, end } = edit.range;
  const strikes = start.line !== end.line || start.character !== end.character;
  const lines = edit.text.replace(/\r\n/g, "\n").split("\n");
  const moreLines = lines.length - 1;
  let label = lines[0];
  if (moreLines > 0) label += ` ⏎ … (+${moreLines} line${moreLines === 1 ? "" : "s"})`;
  return { strikes, label, moreLines, full: edit.text };
}

/** Whether `line` is inside one of the editor's visible ranges (0-based, inclusive). */
export function onScreen(line: number, visible: ReadonlyArray<{ start: number; end: number }>): boolean {
  return visible.some((range) => line >= range.start && line <= range.end);
}

/** The hint at the cursor when the suggestion is off screen. */
export function hintOf(line: number, key = "Tab"): string {
  return `  next edit at line ${line + 1} (${key})`;
}

/** The suggestion's id: the first argument of its accept command. */
export function suggestionId(edit: WireEdit): string | undefined {
  const id = edit.command?.arguments?.[0];
  return typeof id === "string" ? id : undefined;
}

/** The cursor after applying `edit`: the end of its new text (0-based line, character). */
export function endAfter(edit: WireEdit): WirePosition {
  const lines = edit.text.replace(/\r\n/g, "\n").split("\n");
  const start = edit.range.start;
  const last = lines[lines.length - 1];
  return lines.length === 1
    ? { line: start.line, character: start.character + last.length }
    : { line: start.line + lines.length - 1, character: last.length };
}

/** The status bar item's text and tooltip. `enabled`: agentls.nextEdit.enabled. */
export function statusLabel(enabled: boolean, status: NextEditStatus, message: string
                            ): { text: string; tooltip: string; warning: boolean } {
  if (!enabled) {
    return { text: "$(circle-slash) Next edit", warning: false,
             tooltip: "AgentLS next-edit suggestions are off. Click to turn them on." };
  }
  if (status === "off") {
    return { text: "$(circle-slash) Next edit", warning: false,
             tooltip: "AgentLS next-edit suggestions: no next-edit model is set " +
               "(agentls.nextEdit.model, or next_edit.model in .agentls/config.toml). " +
               "Click to turn them off." };
  }
  if (status === "error") {
    return { text: "$(warning) Next edit", warning: true,
             tooltip: `AgentLS next edit: ${message || "the model did not answer"}. ` +
               "Click to turn them off." };
  }
  if (status === "waiting") {
    return { text: "$(loading~spin) Next edit", warning: false,
             tooltip: "AgentLS next edit: waiting for the model. Click to turn them off." };
  }
  return { text: "$(sparkle) Next edit", warning: false,
           tooltip: "AgentLS next-edit suggestions are on (Tab accepts one, Escape dismisses " +
             "it). Click to turn them off." };
}
