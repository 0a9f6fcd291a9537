// The hunks of an agent edit to one file, and their review in the file's own document (no
// vscode import: unit-tested). The server sends minimal TextEdits (lsp/edits.py: one edit per
// changed line region, trimmed to the characters that differ); grouped by the lines they
// touch, they give the same line hunks as the server's (tools/kept_hunks.py), so keeping a
// hunk here is keeping that hunk there.
//
// While the review is open the document holds, for each pending hunk, its old lines (shown
// as removed) followed by its new lines (shown as added): the "region" of the hunk. Keeping
// a hunk replaces its region with the new lines, undoing it with the old ones; every other
// line is the base's. `FileReview` tracks where each region is as the document changes.

import type { Position, TextEdit } from "./review";

const LINE = /[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+/g;

/** Lines with their endings kept; only \n, \r\n and \r end a line (as in LSP). */
export function splitLines(text: string): string[] {
  return text.match(LINE) ?? [];
}

function ending(line: string): string {
  const last = line.charCodeAt(line.length - 1);
  if (last === 10) return line.charCodeAt(line.length - 2) === 13 ? "\r\n" : "\n";
  return last === 13 ? "\r" : "";
}

/** Offsets where each line starts (the last one is past a final line ending). */
function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 10) {
      starts.push(i + 1);
    } else if (c === 13) {
      if (text.charCodeAt(i + 1) === 10) i++;
      starts.push(i + 1);
    }
  }
  return starts;
}

function offsetAt(text: string, starts: number[], p: Position): number {
  if (p.line >= starts.length) return text.length;
  const start = starts[p.line];
  const next = p.line + 1 < starts.length ? starts[p.line + 1] : text.length;
  const end = next - ending(text.slice(start, next)).length;
  return Math.min(start + p.character, end);
}

function rowOf(starts: number[], offset: number): number {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid] <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/** `text` with LSP edits (UTF-16 positions, as VS Code counts) applied. */
export function applyEdits(text: string, edits: readonly TextEdit[]): string {
  const starts = lineStarts(text);
  const spans = edits.map((e, i) => ({
    s: offsetAt(text, starts, e.range.start), e: offsetAt(text, starts, e.range.end), text: e.newText, i,
  })).sort((a, b) => a.s - b.s || a.i - b.i);
  let out = "";
  let at = 0;
  for (const span of spans) {
    out += text.slice(at, span.s) + span.text;
    at = Math.max(at, span.e);
  }
  return out + text.slice(at);
}

export interface Hunk {
  index: number; // 1-based, in file order
  oldStart: number; // 0-based row in the base where its old lines start
  old: string[]; // the base's lines, endings kept
  new: string[]; // the proposed lines
}

/** The proposed text and its line hunks: the edits grouped by the base rows they touch,
 * each group cut to the lines that differ. */
export function fileHunks(base: string, edits: readonly TextEdit[]): { proposed: string; hunks: Hunk[] } {
  const starts = lineStarts(base);
  const spans = edits.map((e) => {
    const s = offsetAt(base, starts, e.range.start);
    const end = Math.max(s, offsetAt(base, starts, e.range.end));
    return { s, e: end, text: e.newText, first: rowOf(starts, s), last: rowOf(starts, end) };
  }).sort((a, b) => a.s - b.s);
  const groups: (typeof spans)[] = [];
  for (const span of spans) {
    const group = groups[groups.length - 1];
    if (group && span.first <= group[group.length - 1].last) group.push(span);
    else groups.push([span]);
  }
  const hunks: Hunk[] = [];
  for (const group of groups) {
    const first = group[0].first;
    const last = Math.max(...group.map((g) => g.last));
    const from = starts[first];
    const to = last + 1 < starts.length ? starts[last + 1] : base.length;
    let region = "";
    let at = from;
    for (const span of group) {
      region += base.slice(at, span.s) + span.text;
      at = Math.max(at, span.e);
    }
    region += base.slice(at, to);
    const old = splitLines(base.slice(from, to));
    const now = splitLines(region);
    let head = 0;
    while (head < old.length && head < now.length && old[head] === now[head]) head++;
    let tail = 0;
    while (tail < old.length - head && tail < now.length - head &&
           old[old.length - 1 - tail] === now[now.length - 1 - tail]) tail++;
    if (head === old.length && head === now.length) continue;
    hunks.push({ index: hunks.length + 1, oldStart: first + head,
                 old: old.slice(head, old.length - tail), new: now.slice(head, now.length - tail) });
  }
  return { proposed: applyEdits(base, edits), hunks };
}

/** The line ending a text uses most (for a removed last line shown above added lines). */
export function eolOf(text: string): string {
  const crlf = (text.match(/\r\n/g) ?? []).length;
  const lf = (text.match(/\n/g) ?? []).length - crlf;
  return crlf > lf ? "\r\n" : "\n";
}

export type HunkState = "pending" | "kept" | "undone";

/** Rows [start, end) of the document, and the text that replaces them. */
export interface RowEdit { start: number; end: number; text: string }

/** A person's change to the document: rows `start`..`end` (inclusive) replaced by text
 * holding `newlines` line breaks. */
export interface RowChange { start: number; end: number; newlines: number }

export class FileReview {
  readonly states: HunkState[];
  readonly edited: boolean[];
  private readonly rows: number[]; // where each hunk's region starts in the document now
  private readonly counts: number[]; // how many rows its region has now
  private readonly eol: string;
  private lineCount: number | undefined;
  /** Counts the changes of the regions (decisions, the person's edits, a reset): what is
   * drawn for one value need not be drawn again. */
  stamp = 0;

  constructor(readonly base: string, readonly hunks: readonly Hunk[]) {
    this.eol = eolOf(base);
    this.states = hunks.map(() => "pending");
    this.edited = hunks.map(() => false);
    this.rows = hunks.map(() => 0);
    this.counts = hunks.map(() => 0);
    this.reset();
  }

  /** The lines of hunk `i`'s region in a state: old then new while pending. */
  regionLines(i: number, state: HunkState = this.states[i]): string[] {
    const h = this.hunks[i];
    if (state === "kept") return h.new;
    if (state === "undone") return h.old;
    const old = [...h.old];
    if (old.length && h.new.length && !ending(old[old.length - 1])) {
      old[old.length - 1] += this.eol; // a last line without an ending, shown above the new ones
    }
    return [...old, ...h.new];
  }

  /** The edits that turn the base into the review's text, in base rows, bottom first. */
  openEdits(): RowEdit[] {
    return this.hunks.map((h, i) => ({ start: h.oldStart, end: h.oldStart + h.old.length,
                                       text: this.regionLines(i, "pending").join("") }))
      .filter((e, i) => this.hunks[i].new.length > 0).reverse();
  }

  /** The review's text of the whole document (the base with every region as it is now). */
  text(): string {
    const base = splitLines(this.base);
    const out: string[] = [];
    let at = 0;
    this.hunks.forEach((h, i) => {
      out.push(...base.slice(at, h.oldStart), ...this.regionLines(i));
      at = h.oldStart + h.old.length;
    });
    out.push(...base.slice(at));
    return out.join("");
  }

  /** Where every region is when the document holds `text()` (its document was put back). */
  reset(): void {
    this.stamp++;
    let shift = 0;
    this.hunks.forEach((h, i) => {
      this.edited[i] = false;
      this.rows[i] = h.oldStart + shift;
      this.counts[i] = this.regionLines(i).length;
      shift += this.counts[i] - h.old.length;
    });
  }

  /** How many lines an editor counts in the base (one more than its line endings). */
  get baseLineCount(): number {
    this.lineCount ??= lineStarts(this.base).length;
    return this.lineCount;
  }

  region(i: number): { start: number; end: number } {
    return { start: this.rows[i], end: this.rows[i] + this.counts[i] };
  }

  /** Rows of the removed (old) lines and of the added (new) lines of every pending hunk. */
  decorations(): { removed: [number, number][]; added: [number, number][] } {
    const removed: [number, number][] = [];
    const added: [number, number][] = [];
    this.hunks.forEach((h, i) => {
      if (this.states[i] !== "pending" || this.edited[i]) {
        if (this.states[i] === "pending" && this.counts[i]) added.push([this.rows[i], this.rows[i] + this.counts[i]]);
        return;
      }
      const r = this.rows[i];
      if (h.old.length) removed.push([r, r + h.old.length]);
      if (h.new.length) added.push([r + h.old.length, r + h.old.length + h.new.length]);
    });
    return { removed, added };
  }

  pending(): number[] {
    return this.states.flatMap((s, i) => (s === "pending" ? [i] : []));
  }

  /** The pending hunk whose region holds `row`, else none. */
  at(row: number): number | undefined {
    for (const i of this.pending()) {
      const { start, end } = this.region(i);
      if (row >= start && (row < end || (start === end && row === start))) return i;
    }
    return undefined;
  }

  /** The pending hunk after (`step` 1) or before (-1) `row`, wrapping around. */
  next(row: number, step: 1 | -1): number | undefined {
    const pending = this.pending();
    if (!pending.length) return undefined;
    if (step === 1) return pending.find((i) => this.rows[i] > row) ?? pending[0];
    return [...pending].reverse().find((i) => this.rows[i] < row) ?? pending[pending.length - 1];
  }

  /** Keep or undo hunk `i`: the edit that does it in the document (or none when the text
   * stays), and the rows after it move. An edited hunk cannot be undone (its old lines
   * would drop the person's edit): `refused` says so. */
  decide(i: number, keep: boolean): { edit?: RowEdit; refused?: string } {
    if (this.states[i] !== "pending") return {};
    if (!keep && this.edited[i]) {
      return { refused: `change ${i + 1} was edited during the review, so it was not undone; undo your edit, or keep it` };
    }
    const h = this.hunks[i];
    const { start, end } = this.region(i);
    let edit: RowEdit | undefined;
    let count: number;
    if (this.edited[i]) {
      count = this.counts[i]; // kept as the person left it
    } else if (keep) {
      edit = h.old.length ? { start, end, text: h.new.join("") } : undefined;
      count = h.new.length;
    } else {
      edit = h.new.length ? { start, end, text: h.old.join("") } : undefined;
      count = h.old.length;
    }
    this.stamp++;
    this.states[i] = keep ? "kept" : "undone";
    this.shift(i, count - this.counts[i]);
    this.counts[i] = count;
    return { edit };
  }

  private shift(i: number, delta: number): void {
    if (!delta) return;
    for (let j = i + 1; j < this.rows.length; j++) this.rows[j] += delta;
  }

  /** A change the person made: regions after it move, a region it touches is edited. */
  onChange(change: RowChange): void {
    this.stamp++;
    const delta = change.newlines - (change.end - change.start);
    for (let i = 0; i < this.rows.length; i++) {
      const start = this.rows[i];
      const end = start + this.counts[i];
      if (start > change.end) {
        this.rows[i] += delta;
      } else if (end > change.start || (end === start && start === change.start)) {
        this.edited[i] = true;
        this.counts[i] = Math.max(0, this.counts[i] + delta);
      }
    }
  }

  /** After the review, the steps that make undo take back one kept hunk at a time: the
   * kept regions back to the old lines (one edit), then each kept hunk again (one edit
   * each, top first). `now` gives the current text of a kept region. */
  keptSteps(now: (i: number) => string): { restore: RowEdit[]; steps: RowEdit[] } {
    const kept = this.states.flatMap((s, i) => (s === "kept" && (this.hunks[i].old.length || this.counts[i]) ? [i] : []));
    const restore = kept.map((i) => ({ ...this.region(i), text: this.hunks[i].old.join("") }));
    // Top first: when hunk i comes back, every kept region above it is back too, so its
    // old lines are where its region is now.
    const steps = kept.map((i) => ({ start: this.rows[i], end: this.rows[i] + this.hunks[i].old.length, text: now(i) }));
    return { restore, steps };
  }

  /** What is left to decide in this file. */
  left(): number {
    return this.states.filter((s) => s === "pending").length;
  }
}

/** `text` with row edits applied (all in its rows, non-overlapping): what the document does. */
export function applyRowEdits(text: string, edits: readonly RowEdit[]): string {
  const lines = splitLines(text);
  const sorted = [...edits].sort((a, b) => b.start - a.start);
  for (const e of sorted) lines.splice(e.start, e.end - e.start, ...splitLines(e.text));
  return lines.join("");
}

/** Edits made one after another (each in the rows the ones above it left) as edits of the
 * rows before any of them, to make at once. */
export function inCurrentRows(edits: readonly RowEdit[]): RowEdit[] {
  let shift = 0;
  const out: RowEdit[] = [];
  for (const e of [...edits].sort((a, b) => a.start - b.start)) {
    out.push({ start: e.start - shift, end: e.end - shift, text: e.text });
    shift += splitLines(e.text).length - (e.end - e.start);
  }
  return out;
}

/** Non-overlapping row edits as one edit of the rows from the first to the last, the rows
 * between them (`textOf(start, end)`, as the document has them) sent again unchanged. */
export function oneEdit(edits: readonly RowEdit[], textOf: (start: number, end: number) => string): RowEdit {
  const sorted = [...edits].sort((a, b) => a.start - b.start);
  let text = "";
  let at = sorted[0].start;
  for (const e of sorted) {
    if (e.start > at) text += textOf(at, e.start);
    text += e.text;
    at = Math.max(at, e.end);
  }
  return { start: sorted[0].start, end: at, text };
}
