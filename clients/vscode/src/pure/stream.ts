// Markdown that arrives a few characters at a time, rendered so that each chunk costs the
// same however long the answer and the conversation already are: finished blocks are
// rendered once and only appended; the block still being written (the "tail") is rendered
// again on each chunk, and is small, except an open code fence, whose code is sent as
// plain text appended line by line and highlighted once, when the fence closes.
// (pure: no vscode import, so node:test covers it)
import { fenceLanguage, renderMarkdown } from "./markdown";

export type Tail =
  | { kind: "html"; html: string }
  | { kind: "code"; lang: string; code: string };

/** What changed since the last `take()`: HTML of blocks now finished (to append), and the
 * tail: replaced (`tail`), or, for the same open fence, only its new code (`codeAppend`). */
export interface StreamUpdate {
  append: string;
  tail?: Tail | null; // null: no tail any more; undefined: unchanged (see codeAppend)
  codeAppend?: string;
}

const FENCE = /^ {0,3}(`{3,}|~{3,})(.*)$/;

export class StreamingMarkdown {
  /** The text not yet in a finished block. */
  private rest = "";
  /** How far `rest` has been scanned for block boundaries (a complete-line offset). */
  private scanned = 0;
  private fence: { char: string; length: number; lang: string; bodyStart: number } | undefined;
  /** A blank line ended here (offset in rest); a boundary once an unindented line follows. */
  private blankEnd = -1;
  private pending = "";
  private sentCode = -1; // code characters of the open fence already sent; -1: none sent
  private renderedHtml = ""; // every finished block, for a full view
  private text = "";

  /** The whole answer so far as the panel shows it (for a full redraw). */
  snapshot(): { html: string; tail: Tail | null } {
    return { html: this.renderedHtml, tail: this.currentTail() };
  }

  push(delta: string): void {
    this.text += delta;
    this.rest += delta;
    this.scan();
  }

  /** The changes since the last take(), and marks them sent. */
  take(): StreamUpdate {
    const update: StreamUpdate = { append: this.pending };
    this.pending = "";
    if (this.fence) {
      const length = this.rest.length - this.fence.bodyStart;
      if (this.sentCode < 0) {
        update.tail = { kind: "code", lang: this.fence.lang,
                        code: this.rest.slice(this.fence.bodyStart) };
      } else if (length > this.sentCode) {
        update.codeAppend = this.rest.slice(this.fence.bodyStart + this.sentCode);
      }
      this.sentCode = length;
    } else {
      this.sentCode = -1;
      update.tail = this.rest ? { kind: "html", html: renderMarkdown(this.rest) } : null;
    }
    return update;
  }

  /** The answer is complete: the tail becomes a finished block (`append`), or, in the rare
   * case where blocks rendered apart differ from the whole (a list whose items are apart, a
   * fence never closed), the whole answer rendered at once (`replace`). */
  finish(): { append: string } | { replace: string } {
    const whole = renderMarkdown(this.text);
    const rest = this.rest ? renderMarkdown(this.rest) : "";
    this.pending = "";
    if (!this.fence && this.renderedHtml + rest === whole) return { append: rest };
    return { replace: whole };
  }

  private currentTail(): Tail | null {
    if (this.fence) {
      return { kind: "code", lang: this.fence.lang, code: this.rest.slice(this.fence.bodyStart) };
    }
    return this.rest ? { kind: "html", html: renderMarkdown(this.rest) } : null;
  }

  private commit(end: number): void {
    if (end <= 0) return;
    const html = renderMarkdown(this.rest.slice(0, end));
    this.pending += html;
    this.renderedHtml += html;
    this.rest = this.rest.slice(end);
    this.scanned -= end;
    if (this.blankEnd >= 0) this.blankEnd -= end;
    if (this.fence) this.fence.bodyStart -= end;
  }

  private scan(): void {
    for (;;) {
      const newline = this.rest.indexOf("\n", this.scanned);
      if (newline < 0) {
        // A line begun unindented after a blank one: the blocks above it are finished.
        const first = this.rest[this.scanned];
        if (!this.fence && this.blankEnd >= 0 && first !== undefined && !/\s/.test(first)) {
          this.commit(this.scanned);
          this.blankEnd = -1;
        }
        return;
      }
      const start = this.scanned;
      const line = this.rest.slice(start, newline);
      this.scanned = newline + 1;
      if (this.fence) {
        const m = FENCE.exec(line);
        if (m && m[1][0] === this.fence.char && m[1].length >= this.fence.length && !m[2].trim()) {
          this.fence = undefined;
          this.sentCode = -1;
          this.commit(this.scanned);
        }
        continue;
      }
      const m = FENCE.exec(line);
      if (m && !(m[1][0] === "`" && m[2].includes("`"))) {
        this.commit(start); // a fence ends the paragraph before it
        this.fence = { char: m[1][0], length: m[1].length, lang: fenceLanguage(m[2]),
                       bodyStart: this.scanned };
        this.blankEnd = -1;
        continue;
      }
      if (!line.trim()) {
        this.blankEnd = this.scanned;
      } else if (this.blankEnd >= 0) {
        // An indented line may continue a list item: wait for an unindented one.
        if (!/^\s/.test(line)) this.commit(start);
        this.blankEnd = -1;
      }
    }
  }
}
