// The review of an agent edit in the editor itself, hunk by hunk (agentls.review = "editor"),
// as Neovim's review does it. Each changed file's document holds, while the review is open,
// every pending hunk's old lines (drawn as removed) above its new lines (drawn as added); a
// CodeLens over each hunk keeps or undoes it; the editor's title bar moves between changes
// and keeps or undoes the file; keys act only while a review is open (context keys); created,
// deleted and renamed files are decided whole; the status bar says what is left. When
// everything is decided the documents hold the base with exactly the kept hunks (unsaved: the
// person saves), each kept hunk its own undo step; a file left as it was found (unmodified
// before, every change undone) is saved back so it does not stay modified (pure/review.ts
// saveBack). Only then, every edit applied, the applyEdit answer says what was kept; the
// server reads the rest from the documents (lsp/review_check.py). The hunk model is
// src/pure/hunks.ts.
import * as vscode from "vscode";
import type { ApplyWorkspaceEditParams, ApplyWorkspaceEditResult, LanguageClient } from "vscode-languageclient/node";
import { recordTiming } from "./chat";
import { applyEdits, FileReview, fileHunks, inCurrentRows, oneEdit, type RowEdit, splitLines } from "./pure/hunks";
import {
  keptEdit, outcome, reviewFiles, saveBack, saveMayChange, shownPath, type FileKind, type FileOutcome, type TextEdit,
  type WorkspaceEdit,
} from "./pure/review";
import type { StatusItem } from "./status";

const SCHEME = "agentls-review"; // a created file's proposed text, before it exists
const KEYS = { keep: "Ctrl+Alt+Y", undo: "Ctrl+Alt+N" };
/** Past this many pending changes in a file, CodeLens only near what its editors show. */
const MANY_LENSES = 100;
const LENS_MARGIN = 60; // rows above and below the visible ones
/** How long after the first file is shown the others' documents are read. */
const OTHERS_AFTER_MS = 150;
/** Past this many row edits at once, one edit from the first to the last: every listener of
 * document changes (the extension host, the language client, the server) takes each change
 * of an edit on its own, and 2,000 of them in a 20,000-line file cost seconds. */
const MANY_EDITS = 100;
/** Kept hunks of one file that each get their own undo step; the rest share the last one. */
const UNDO_STEPS = 500;

interface ReviewedFile {
  uri: vscode.Uri; // the file after the change (a deleted file; a rename's target)
  shownUri: vscode.Uri; // where it is reviewed: the file, its proposed text, a rename's source
  kind: FileKind;
  hunks?: FileReview; // a changed file
  whole: "pending" | "kept" | "undone"; // a created, deleted or renamed file
  apply?: WorkspaceEdit; // what keeping a whole file applies
  proposed?: string; // a created file's text
  failed?: string;
  edits?: TextEdit[]; // a changed file's, until its document is read (`prepare`)
  ready?: Promise<void>; // read and showing the review's text (the files after the first)
  version?: number | null; // the document version the edit was made for
  cleanBefore?: boolean; // a changed file's document was unmodified when the review read it
  touched?: boolean; // the person changed its document during the review
}

/** Why a file's review stopped: VS Code applies a workspace edit only to the document version
 * it was made for, and refuses it when a change of the document was on its way. */
const REFUSED = "VS Code did not apply the review's edit of it (the document changed at that moment); check the file";
const NOT_HELD = "its document does not hold what the review decided (an edit of the review did not land); check the file";

class Review {
  files: ReviewedFile[] = [];
  done = false;
  answer!: (result: ApplyWorkspaceEditResult) => void;
  constructor(readonly label: string, readonly folder: string | undefined) {}

  find(uri: vscode.Uri): ReviewedFile | undefined {
    const key = uri.toString();
    return this.files.find((f) => f.shownUri.toString() === key);
  }

  left(file: ReviewedFile): number {
    return file.hunks ? file.hunks.left() : file.whole === "pending" ? Math.max(1, file.edits?.length ?? 1) : 0;
  }

  /** Changed files whose documents are still being read. */
  reading(): number {
    return this.files.filter((f) => f.edits).length;
  }

  pendingFiles(): ReviewedFile[] {
    return this.files.filter((f) => this.left(f) > 0);
  }
}

/** The review's decoration types: added lines (background, gutter mark), removed lines. */
export function reviewDecorations(extensionUri: vscode.Uri): { added: vscode.TextEditorDecorationType;
                                                                removed: vscode.TextEditorDecorationType } {
  const icon = (name: string) => vscode.Uri.joinPath(extensionUri, "media", name);
  return {
    added: vscode.window.createTextEditorDecorationType({
      isWholeLine: true,
      backgroundColor: new vscode.ThemeColor("diffEditor.insertedLineBackground"),
      overviewRulerColor: new vscode.ThemeColor("editorOverviewRuler.addedForeground"),
      overviewRulerLane: vscode.OverviewRulerLane.Left,
      light: { gutterIconPath: icon("review-added-light.svg") },
      dark: { gutterIconPath: icon("review-added-dark.svg") },
      gutterIconSize: "contain",
    }),
    removed: vscode.window.createTextEditorDecorationType({
      isWholeLine: true,
      backgroundColor: new vscode.ThemeColor("diffEditor.removedLineBackground"),
      overviewRulerColor: new vscode.ThemeColor("editorOverviewRuler.deletedForeground"),
      overviewRulerLane: vscode.OverviewRulerLane.Left,
      opacity: "0.75",
      light: { gutterIconPath: icon("review-removed-light.svg") },
      dark: { gutterIconPath: icon("review-removed-dark.svg") },
      gutterIconSize: "contain",
    }),
  };
}

export class EditorReview implements vscode.Disposable, vscode.CodeLensProvider,
  vscode.TextDocumentContentProvider, vscode.FileDecorationProvider {
  private review: Review | undefined;
  private readonly disposables: vscode.Disposable[] = [];
  private readonly lensesChanged = new vscode.EventEmitter<void>();
  readonly onDidChangeCodeLenses = this.lensesChanged.event;
  private readonly decorationsChanged = new vscode.EventEmitter<vscode.Uri[]>();
  readonly onDidChangeFileDecorations = this.decorationsChanged.event;
  private readonly added: vscode.TextEditorDecorationType;
  private readonly removed: vscode.TextEditorDecorationType;
  private readonly ours = new Map<string, number>(); // documents our own edits are changing now, and how many
  private queue: Promise<unknown> = Promise.resolve(); // decisions, one at a time

  constructor(extensionUri: vscode.Uri, private readonly status: StatusItem) {
    const { added, removed } = reviewDecorations(extensionUri);
    this.added = added;
    this.removed = removed;
    const command = (id: string, run: (...args: never[]) => unknown) =>
      this.disposables.push(vscode.commands.registerCommand(id, run));
    command("agentls.review.keep", (uri?: string, index?: number) => this.decideHere(true, uri, index));
    command("agentls.review.undo", (uri?: string, index?: number) => this.decideHere(false, uri, index));
    command("agentls.review.next", () => this.step(1));
    command("agentls.review.previous", () => this.step(-1));
    command("agentls.review.keepFile", (uri?: vscode.Uri) => this.decideFile(true, uri));
    command("agentls.review.undoFile", (uri?: vscode.Uri) => this.decideFile(false, uri));
    command("agentls.review.keepAll", () => this.decideAll(true));
    command("agentls.review.undoAll", () => this.decideAll(false));
    command("agentls.review.list", () => this.list());
    this.disposables.push(
      this.added, this.removed, this.lensesChanged, this.decorationsChanged,
      vscode.languages.registerCodeLensProvider([{ scheme: "file" }, { scheme: SCHEME }, { scheme: "untitled" }], this),
      vscode.workspace.registerTextDocumentContentProvider(SCHEME, this),
      vscode.window.registerFileDecorationProvider(this),
      vscode.workspace.onDidChangeTextDocument((e) => this.onChange(e)),
      vscode.window.onDidChangeVisibleTextEditors(() => void this.onVisible()),
      vscode.window.onDidChangeActiveTextEditor(() => this.changed()),
      vscode.window.onDidChangeTextEditorVisibleRanges((e) => this.onScroll(e.textEditor)),
    );
    void this.setContext();
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }

  isOpen(): boolean {
    return this.review !== undefined;
  }

  // --- the request ---------------------------------------------------------------------------

  /** The workspace/applyEdit handler's review: resolves with the truthful answer once every
   * change is decided. */
  async run(lc: LanguageClient, params: ApplyWorkspaceEditParams): Promise<ApplyWorkspaceEditResult> {
    const arrived = Date.now();
    const began = performance.now();
    if (this.review) {
      return { applied: false, failureReason: "another AgentLS review is still open; finish it and ask again" };
    }
    this.attach(lc);
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri.toString();
    const review = new Review(params.label ?? "AgentLS edit", folder);
    this.load(review, params.edit as WorkspaceEdit, lc);
    if (review.files.length === 0) return { applied: true };
    const answered = new Promise<ApplyWorkspaceEditResult>((resolve) => { review.answer = resolve; });
    this.review = review;
    // The first file is shown at once, takes the review's text (its own undo step) and is
    // drawn; the others right after (a decision waits for them: `serial`).
    const first = review.files[0];
    let shown = 0;
    try {
      // Shown first: the window reads the file once, for the editor. Its hunks come from the
      // shown document; the review's text, its decorations and the selection are then sent
      // in one go, so the window draws them together (no separate read of the document
      // first, no text drawn before its colours).
      const editor = await vscode.window.showTextDocument(first.shownUri, { preview: false });
      shown = performance.now();
      await this.prepare(first);
      if (first.hunks) await this.openIn(editor, first);
      else this.draw(editor);
    } catch (error) {
      first.failed ??= `the review could not show it: ${String(error)}`;
    }
    this.changed();
    recordTiming({ figure: "review_open", arrivedAt: arrived, files: review.files.length,
                   hunks: review.files.reduce((n, f) => n + (f.hunks?.hunks.length ?? f.edits?.length ?? 0), 0),
                   openMs: performance.now() - began, shownMs: shown ? shown - began : null,
                   reviewTextMs: shown ? performance.now() - shown : null });
    // One file after another, after a pause: the window draws the first file's review before
    // it opens the others' documents (all at once they held its drawing back 2 s). Deciding
    // in a file waits for that file only (`ready`).
    let previous: Promise<void> = new Promise((resolve) => setTimeout(resolve, OTHERS_AFTER_MS));
    for (const f of review.files) {
      if (f === first) continue;
      const after = previous;
      f.ready = previous = (async () => {
        await after;
        try {
          await this.prepare(f);
          if (f.hunks && !(await this.edit(f, f.hunks.openEdits()))) this.dropped(f, REFUSED);
        } catch (error) {
          f.failed ??= `the review could not show it: ${String(error)}`;
        }
        // Shown already (the person went to it): drawn now.
        if (vscode.window.visibleTextEditors.some((e) => e.document.uri.toString() === f.shownUri.toString())) {
          this.changed();
        }
      })();
    }
    void previous.then(() => this.serial(async () => {
      this.changed();
      await this.finishIfDone(); // every file failed or had nothing to change
    }));
    return answered;
  }

  /** The files of the edit, in order; a changed file keeps its edits until `prepare`. */
  private load(review: Review, lsp: WorkspaceEdit, lc: LanguageClient): void {
    const byUri = new Map<string, TextEdit[]>();
    const versions = new Map<string, number | null>();
    for (const change of lsp.documentChanges ?? []) {
      if ("textDocument" in change) {
        byUri.set(change.textDocument.uri, [...(byUri.get(change.textDocument.uri) ?? []), ...change.edits]);
        versions.set(change.textDocument.uri, change.textDocument.version);
      }
    }
    for (const [uri, edits] of Object.entries(lsp.changes ?? {})) byUri.set(uri, [...(byUri.get(uri) ?? []), ...edits]);
    for (const file of reviewFiles(lsp)) {
      const uri = lc.protocol2CodeConverter.asUri(file.uri);
      const f: ReviewedFile = { uri, shownUri: uri, kind: file.kind, whole: "pending" };
      if (file.kind === "changed") {
        f.edits = byUri.get(file.uri) ?? [];
        f.version = versions.get(file.uri);
      } else {
        f.apply = keptEdit(lsp, new Set([file.uri]));
        if (file.kind === "created") {
          f.proposed = applyEdits("", byUri.get(file.uri) ?? []);
          f.shownUri = uri.with({ scheme: SCHEME });
        } else if (file.kind === "renamed" && file.oldUri) {
          f.shownUri = lc.protocol2CodeConverter.asUri(file.oldUri);
        }
      }
      review.files.push(f);
    }
  }

  /** A changed file's document read: its base and hunks, or why it cannot be reviewed (it
   * moved on since the server read it: nothing of it is applied). */
  private async prepare(f: ReviewedFile): Promise<void> {
    if (!f.edits) return;
    const edits = f.edits;
    f.edits = undefined;
    const doc = await vscode.workspace.openTextDocument(f.uri);
    if (typeof f.version === "number" && f.version !== doc.version) {
      f.failed = "it changed in the editor while the edit was on its way";
      f.whole = "undone";
      return;
    }
    const base = doc.getText();
    f.cleanBefore = !doc.isDirty;
    const { hunks } = fileHunks(base, edits);
    if (hunks.length) f.hunks = new FileReview(base, hunks);
    else f.whole = "kept"; // the edit changes nothing in it
  }

  /** A changed file whose document does not hold the review's text: out of the review,
   * nothing of it applied, and why. */
  private dropped(f: ReviewedFile, why: string): void {
    f.failed ??= why;
    f.hunks = undefined;
    f.whole = "undone";
  }

  /** Our own edit of a reviewed file's document, as row edits (one undo step): true once VS
   * Code applied it (the document holds it), false when it refused it. */
  private async edit(f: ReviewedFile, edits: RowEdit[]): Promise<boolean> {
    if (!edits.length) return true;
    const doc = await vscode.workspace.openTextDocument(f.uri);
    const edit = new vscode.WorkspaceEdit();
    for (const e of fewEdits(doc, edits)) edit.replace(f.uri, rowRange(doc, e), e.text);
    const key = f.uri.toString();
    this.ours.set(key, (this.ours.get(key) ?? 0) + 1);
    try {
      return await vscode.workspace.applyEdit(edit);
    } finally {
      this.unmark(key);
    }
  }

  /** A file's review text put in `editor`'s document, drawn and the first change revealed:
   * sent in one go, so the window draws the text, its colours and marks together. */
  private async openIn(editor: vscode.TextEditor, f: ReviewedFile): Promise<void> {
    const edits = f.hunks!.openEdits();
    const sent = this.editIn(editor, f, edits);
    this.paint(editor, f);
    this.reveal(editor, f, f.hunks!.pending()[0]);
    if (await sent) return;
    // The window refused it (its document moved on): the same rows as a workspace edit.
    if (!(await this.edit(f, edits))) {
      this.dropped(f, REFUSED);
      this.draw(editor);
      return;
    }
    this.painted.delete(editor);
    this.draw(editor);
    this.reveal(editor, f, f.hunks!.pending()[0]);
  }

  /** Our own edit of a file shown in `editor` (one undo step), sent at once: what is sent
   * after it in the same turn (decorations, the selection) lands on the edited text. False
   * when the window refused it. */
  private async editIn(editor: vscode.TextEditor, f: ReviewedFile, edits: RowEdit[]): Promise<boolean> {
    if (!edits.length) return true;
    const doc = editor.document;
    const key = f.uri.toString();
    this.ours.set(key, (this.ours.get(key) ?? 0) + 1);
    try {
      return await editor.edit((b) => { for (const e of fewEdits(doc, edits)) b.replace(rowRange(doc, e), e.text); },
                               { undoStopBefore: true, undoStopAfter: true });
    } catch {
      return false; // its editor was closed
    } finally {
      this.unmark(key);
    }
  }

  private unmark(key: string): void {
    const n = (this.ours.get(key) ?? 1) - 1;
    if (n) this.ours.set(key, n);
    else this.ours.delete(key);
  }

  // --- deciding ------------------------------------------------------------------------------

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.queue.then(work, work);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** Keep or undo hunk `index` of `uri` (a CodeLens), else the change at the cursor or the
   * next one after it in the active editor. */
  private decideHere(keep: boolean, uri?: string, index?: number): Promise<void> {
    const asked = performance.now();
    return this.serial(async () => {
      const began = performance.now();
      const review = this.review;
      if (!review) return;
      const editor = vscode.window.activeTextEditor;
      const f = uri ? review.files.find((x) => x.shownUri.toString() === uri)
        : editor && review.find(editor.document.uri);
      if (!f) {
        void vscode.window.showInformationMessage("AgentLS: no change of the review here; the status bar lists them.");
        return;
      }
      await f.ready;
      if (!f.hunks) {
        await this.decideWhole(f, keep);
      } else {
        const row = editor?.selection.active.line ?? 0;
        const i = index ?? f.hunks.at(row) ?? f.hunks.next(row, 1);
        if (i === undefined) return;
        await this.decideHunk(f, i, keep);
        // On to the next change in this file, as Neovim's review does.
        const next = f.hunks.next(f.hunks.region(i).start - 1, 1);
        if (next !== undefined && editor?.document.uri.toString() === f.uri.toString()) this.reveal(editor, f, next);
      }
      this.changed([f]);
      recordTiming({ figure: "review_decide", keep, ms: performance.now() - asked, queuedMs: began - asked });
      await this.finishIfDone();
    });
  }

  private async decideHunk(f: ReviewedFile, i: number, keep: boolean): Promise<void> {
    await f.ready;
    await this.attached(f);
    const { edit, refused } = f.hunks!.decide(i, keep);
    if (refused) {
      void vscode.window.showWarningMessage(`AgentLS: ${refused}.`);
      return;
    }
    if (edit) await this.editShown(f, edit);
  }

  /** A decision's edit: in the file's editor when it is shown, with its decorations sent
   * right after it (the window draws both together), else as a workspace edit. */
  private async editShown(f: ReviewedFile, edit: RowEdit): Promise<void> {
    const key = f.uri.toString();
    const editors = vscode.window.visibleTextEditors.filter((e) => e.document.uri.toString() === key);
    const editor = editors.find((e) => e === vscode.window.activeTextEditor) ?? editors[0];
    if (!editor) {
      if (!(await this.edit(f, [edit]))) f.failed ??= REFUSED;
      return;
    }
    const sent = this.editIn(editor, f, [edit]);
    for (const e of editors) this.paint(e, f);
    if (await sent) return;
    if (!(await this.edit(f, [edit]))) f.failed ??= REFUSED;
    for (const e of editors) this.painted.delete(e); // drawn again by `changed`
  }

  /** A file whose document went back to the base (its editor closed without saving, or
   * reverted) gets the review's text again, with what is decided so far. */
  private async attached(f: ReviewedFile): Promise<vscode.TextDocument> {
    await f.ready;
    const doc = await vscode.workspace.openTextDocument(f.uri);
    const hunks = f.hunks!;
    if (this.awayFromReview(f, doc)) {
      hunks.reset();
      if (!(await this.edit(f, [{ start: 0, end: doc.lineCount + 1, text: hunks.text() }]))) f.failed ??= REFUSED;
    }
    return doc;
  }

  private async decideWhole(f: ReviewedFile, keep: boolean): Promise<void> {
    if (f.whole !== "pending") return;
    f.whole = keep ? "kept" : "undone";
    if (!keep || !f.apply) return;
    const edit = await this.converter?.(f.apply);
    if (!edit || !(await vscode.workspace.applyEdit(edit))) f.failed = "VS Code could not apply it";
    if (f.kind === "created" && !f.failed) {
      // The created file in place of its proposed text.
      for (const tab of vscode.window.tabGroups.all.flatMap((g) => g.tabs)) {
        if (tab.input instanceof vscode.TabInputText && tab.input.uri.toString() === f.shownUri.toString()) {
          await vscode.window.showTextDocument(f.uri, { preview: false });
          await vscode.window.tabGroups.close(tab);
        }
      }
    }
  }

  /** Set by `attach`: the client's converter from an LSP WorkspaceEdit. */
  private converter?: (edit: WorkspaceEdit) => Promise<vscode.WorkspaceEdit>;

  attach(lc: LanguageClient): void {
    this.converter = (edit) => lc.protocol2CodeConverter.asWorkspaceEdit(edit as ApplyWorkspaceEditParams["edit"]);
  }

  private decideFile(keep: boolean, uri?: vscode.Uri): Promise<void> {
    return this.serial(async () => {
      const review = this.review;
      const target = uri ?? vscode.window.activeTextEditor?.document.uri;
      const f = review && target && review.find(target);
      if (!f) return;
      await this.decideFiles([f], keep);
      const next = review.pendingFiles()[0];
      if (next) await this.show(next, next.hunks?.pending()[0]);
      this.changed();
      await this.finishIfDone();
    });
  }

  private decideAll(keep: boolean): Promise<void> {
    return this.serial(async () => {
      const review = this.review;
      if (!review) return;
      await this.decideFiles(review.pendingFiles(), keep);
      this.changed();
      await this.finishIfDone();
    });
  }

  private async decideFiles(files: ReviewedFile[], keep: boolean): Promise<void> {
    for (const f of files) {
      await f.ready;
      if (!f.hunks) {
        await this.decideWhole(f, keep);
        continue;
      }
      await this.attached(f);
      const edits: RowEdit[] = [];
      for (const i of f.hunks.pending()) {
        const { edit } = f.hunks.decide(i, keep);
        if (edit) edits.push(edit);
      }
      // The rows of each edit were counted after the ones above it were made: apply bottom
      // first in one edit, in the rows the document has now.
      if (!(await this.edit(f, inCurrentRows(edits)))) f.failed ??= REFUSED;
    }
  }

  private async finishIfDone(): Promise<void> {
    const review = this.review;
    if (!review || review.done || review.pendingFiles().length) return;
    review.done = true;
    const began = performance.now();
    // Each kept hunk its own undo step: the kept regions back to the old lines, then each
    // kept hunk again (src/pure/hunks.ts keptSteps).
    for (const f of review.files) {
      if (!f.hunks) continue;
      const doc = await this.attached(f);
      const lines = splitLines(doc.getText());
      const { restore, steps } = f.hunks.keptSteps((i) => {
        const { start, end } = f.hunks!.region(i);
        return lines.slice(start, end).join("");
      });
      if (!steps.length) continue;
      const own = steps.slice(0, UNDO_STEPS - 1);
      const rest = steps.slice(own.length);
      for (const edits of [restore, ...own.map((e) => [e]), ...(rest.length ? [rest] : [])]) {
        if (!(await this.edit(f, edits))) {
          f.failed ??= REFUSED;
          break;
        }
      }
    }
    // Answered only now: every edit of the review has been applied (each awaited above), and
    // a file left as it was found is saved back, not left modified.
    for (const f of review.files) await this.confirmHeld(f);
    const restored = performance.now();
    const saved = await Promise.all(review.files.map((f) => this.saveIfAsFound(f)));
    recordTiming({ figure: "review_finish", files: review.files.length, keptStepsMs: restored - began,
                   savedBack: saved.filter(Boolean).length, saveMs: performance.now() - restored });
    this.review = undefined;
    this.changed();
    const outcomes: FileOutcome[] = review.files.map((f) => ({
      uri: f.uri.toString(), kind: f.kind, failed: f.failed,
      hunks: f.hunks?.hunks.length, kept: f.hunks ? f.hunks.states.filter((s) => s === "kept").length
        : f.whole === "kept" ? 1 : 0,
    }));
    const { allKept, text } = outcome(outcomes, review.folder);
    void vscode.window.setStatusBarMessage(`AgentLS: review done: ${text}`, 8000);
    review.answer(allKept ? { applied: true } : { applied: false, failureReason: text });
  }

  /** A file the person did not edit during the review holds what was decided (the base with
   * the kept changes), or the answer says it does not: nothing is reported done unseen. */
  private async confirmHeld(f: ReviewedFile): Promise<void> {
    if (!f.hunks || f.failed || f.touched) return;
    const doc = await vscode.workspace.openTextDocument(f.uri);
    if (doc.getText() !== f.hunks.text()) f.failed = NOT_HELD;
  }

  /** A changed file that ends the review as it was found, saved back (src/pure/review.ts
   * saveBack): it does not stay modified with the text it has on disk. */
  private async saveIfAsFound(f: ReviewedFile): Promise<boolean> {
    if (!f.hunks || f.failed || !f.cleanBefore) return false;
    const doc = await vscode.workspace.openTextDocument(f.uri);
    const text = doc.getText();
    if (text !== f.hunks.base) return false; // something kept or edited: the person saves it
    const settings = vscode.workspace.getConfiguration(undefined, doc); // with the language's overrides
    const mayChange = saveMayChange({
      formatOnSave: settings.get<boolean>("editor.formatOnSave"),
      codeActionsOnSave: settings.get("editor.codeActionsOnSave"),
      trimTrailingWhitespace: settings.get<boolean>("files.trimTrailingWhitespace"),
      insertFinalNewline: settings.get<boolean>("files.insertFinalNewline"),
      trimFinalNewlines: settings.get<boolean>("files.trimFinalNewlines"),
    });
    const disk = mayChange ? undefined : await readText(f.uri);
    return saveBack({ cleanBefore: f.cleanBefore, base: f.hunks.base, text, disk, saveMayChange: mayChange }) &&
      await doc.save();
  }

  // --- moving around -------------------------------------------------------------------------

  private async step(direction: 1 | -1): Promise<void> {
    const review = this.review;
    if (!review) return;
    const editor = vscode.window.activeTextEditor;
    const here = editor && review.find(editor.document.uri);
    const files = review.pendingFiles();
    if (editor && here?.hunks && here.hunks.left()) {
      const row = editor.selection.active.line;
      const pending = here.hunks.pending();
      const start = (i: number) => here.hunks!.region(i).start;
      const i = direction === 1 ? pending.find((k) => start(k) > row)
        : [...pending].reverse().find((k) => start(k) < row);
      if (i !== undefined || files.length === 1) {
        this.reveal(editor, here, i ?? (direction === 1 ? pending[0] : pending[pending.length - 1]));
        return;
      }
    }
    // On to the next (previous) file with something left to decide, around the end.
    if (!files.length) return;
    const at = here ? review.files.indexOf(here) : -1;
    const order = direction === 1 ? [...files.filter((f) => review.files.indexOf(f) > at), ...files]
      : [...files.filter((f) => review.files.indexOf(f) < at).reverse(), ...[...files].reverse()];
    const f = order.find((x) => x !== here) ?? order[0];
    const pending = f.hunks?.pending() ?? [];
    await this.show(f, direction === 1 ? pending[0] : pending[pending.length - 1]);
  }

  private async show(f: ReviewedFile | undefined, hunk?: number): Promise<void> {
    if (!f) return;
    const editor = await vscode.window.showTextDocument(f.shownUri, { preview: false });
    if (f.hunks && hunk !== undefined) this.reveal(editor, f, hunk);
    this.draw(editor);
  }

  private reveal(editor: vscode.TextEditor, f: ReviewedFile, i: number): void {
    const { start, end } = f.hunks!.region(i);
    const at = new vscode.Position(start, 0);
    editor.selection = new vscode.Selection(at, at);
    editor.revealRange(new vscode.Range(at, new vscode.Position(Math.max(start, end - 1), 0)),
                       vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  }

  private async list(): Promise<void> {
    const review = this.review;
    if (!review) return;
    const pick = await vscode.window.showQuickPick(review.files.map((f, k) => ({
      label: shownPath(f.uri.toString(), review.folder),
      description: `${f.kind} · file ${k + 1} of ${review.files.length}`,
      detail: this.describeLeft(review, f), file: f,
    })), { title: `${review.label}: the review's files`, placeHolder: "Pick a file to go to its changes" });
    if (pick) await this.show(pick.file, pick.file.hunks?.pending()[0]);
  }

  private describeLeft(review: Review, f: ReviewedFile): string {
    if (!f.hunks) return f.whole === "pending" ? `to decide (${f.kind} whole)` : f.whole;
    const left = f.hunks.left();
    const kept = f.hunks.states.filter((s) => s === "kept").length;
    return left ? `${left} of ${f.hunks.hunks.length} changes to decide` : `kept ${kept} of ${f.hunks.hunks.length}`;
  }

  // --- drawing -------------------------------------------------------------------------------

  /** Everything that shows the review, after a change of it (of `files` only: the
   * explorer's marks of the others stay). */
  private changed(files?: ReviewedFile[]): void {
    for (const editor of vscode.window.visibleTextEditors) this.draw(editor);
    this.lensesChanged.fire();
    this.decorationsChanged.fire((files ?? this.review?.files ?? []).map((f) => f.uri));
    void this.setContext();
    const review = this.review;
    if (review) {
      const files = review.pendingFiles();
      const left = files.reduce((n, f) => n + review.left(f), 0);
      const active = vscode.window.activeTextEditor && review.find(vscode.window.activeTextEditor.document.uri);
      const position = active ? ` · file ${review.files.indexOf(active) + 1} of ${review.files.length}` : "";
      const reading = review.reading() ? " (reading the files…)" : "";
      this.status.reviewLeft(`${left} change${left === 1 ? "" : "s"} left in ${files.length} ` +
                             `file${files.length === 1 ? "" : "s"}${position}${reading}`);
    }
  }

  private draw(editor: vscode.TextEditor): void {
    const f = this.review?.find(editor.document.uri);
    if (!f || this.awayFromReview(f, editor.document)) {
      this.painted.delete(editor);
      editor.setDecorations(this.added, []);
      editor.setDecorations(this.removed, []);
      return;
    }
    this.paint(editor, f);
  }

  /** What each editor shows of the review, by the file and its stamp (or whole state). */
  private readonly painted = new WeakMap<vscode.TextEditor, { f: ReviewedFile; stamp: number | string }>();

  /** The review's decorations of `f` in `editor`, as its document is (or is about to be,
   * after an edit sent just before). */
  private paint(editor: vscode.TextEditor, f: ReviewedFile): void {
    const stamp = f.hunks ? f.hunks.stamp : f.whole;
    const last = this.painted.get(editor);
    if (last?.f === f && last.stamp === stamp) return;
    this.painted.set(editor, { f, stamp });
    const lines = (rows: [number, number][]) => rows.filter(([a, b]) => b > a)
      .map(([a, b]) => new vscode.Range(a, 0, b - 1, 0));
    if (f.hunks) {
      const { added, removed } = f.hunks.decorations();
      editor.setDecorations(this.added, lines(added));
      editor.setDecorations(this.removed, lines(removed));
    } else {
      // Every line of the file, not the empty one after its last line ending.
      const doc = editor.document;
      const rows = doc.lineCount - (doc.lineCount > 1 && doc.lineAt(doc.lineCount - 1).text === "" ? 1 : 0);
      const all: [number, number][] = f.whole === "pending" ? [[0, rows]] : [];
      editor.setDecorations(this.added, f.kind === "created" ? lines(all) : []);
      editor.setDecorations(this.removed, f.kind === "deleted" ? lines(all) : []);
    }
  }

  private context: [boolean, boolean] | undefined;

  /** The context keys the review's keys and title bar buttons wait for; set when they change. */
  private async setContext(): Promise<void> {
    const review = this.review;
    const editor = vscode.window.activeTextEditor;
    const f = review && editor && review.find(editor.document.uri);
    const next: [boolean, boolean] = [Boolean(review), Boolean(f && review!.left(f) > 0)];
    if (this.context && this.context[0] === next[0] && this.context[1] === next[1]) return;
    this.context = next;
    await vscode.commands.executeCommand("setContext", "agentls.reviewing", next[0]);
    await vscode.commands.executeCommand("setContext", "agentls.review.inFile", next[1]);
  }

  provideCodeLenses(document: vscode.TextDocument): vscode.CodeLens[] {
    const review = this.review;
    const f = review?.find(document.uri);
    if (!review || !f || this.awayFromReview(f, document)) return [];
    const uri = f.shownUri.toString();
    if (!f.hunks) {
      if (f.whole !== "pending" || f.kind === "changed") return []; // still being read
      const range = new vscode.Range(0, 0, 0, 0);
      const what = f.kind === "created" ? "Create this file" : f.kind === "deleted" ? "Delete this file"
        : `Rename to ${shownPath(f.uri.toString(), review.folder)}`;
      return [
        new vscode.CodeLens(range, { title: `${what}: Keep (${KEYS.keep})`, command: "agentls.review.keep", arguments: [uri] }),
        new vscode.CodeLens(range, { title: `Undo (${KEYS.undo})`, command: "agentls.review.undo", arguments: [uri] }),
      ];
    }
    const pending = f.hunks.pending();
    // A file with many changes: the lenses of those near what its editors show (VS Code
    // drew none for 2,000 hunks' 6,000 lenses); scrolling asks again.
    const near = pending.length > MANY_LENSES ? this.nearVisible(document) : undefined;
    return pending.flatMap((i, k) => {
      if (near && !near(f.hunks!.region(i).start)) return [];
      const range = new vscode.Range(f.hunks!.region(i).start, 0, f.hunks!.region(i).start, 0);
      return [
        new vscode.CodeLens(range, { title: `Keep (${KEYS.keep})`, command: "agentls.review.keep", arguments: [uri, i] }),
        new vscode.CodeLens(range, { title: `Undo (${KEYS.undo})`, command: "agentls.review.undo", arguments: [uri, i] }),
        new vscode.CodeLens(range, { title: `${k + 1} of ${pending.length}`, command: "" }),
      ];
    });
  }

  private nearVisible(document: vscode.TextDocument): (row: number) => boolean {
    const spans = vscode.window.visibleTextEditors.filter((e) => e.document === document)
      .flatMap((e) => e.visibleRanges).map((r) => [r.start.line - LENS_MARGIN, r.end.line + LENS_MARGIN]);
    return (row) => spans.some(([a, b]) => row >= a && row <= b);
  }

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.review?.files.find((f) => f.shownUri.toString() === uri.toString())?.proposed ?? "";
  }

  provideFileDecoration(uri: vscode.Uri): vscode.FileDecoration | undefined {
    const review = this.review;
    const f = review?.find(uri);
    if (!review || !f || !review.left(f)) return undefined;
    const k = review.files.indexOf(f) + 1;
    return new vscode.FileDecoration(k < 100 ? String(k) : "…",
      `AgentLS review: file ${k} of ${review.files.length}, ${this.describeLeft(review, f)}`,
      new vscode.ThemeColor("gitDecoration.modifiedResourceForeground"));
  }

  // --- the documents change ------------------------------------------------------------------

  /** The document went back to the base while the review's text is something else: the
   * review's text goes back in when it is shown or decided (`attached`). */
  private awayFromReview(f: ReviewedFile, doc: vscode.TextDocument): boolean {
    const hunks = f.hunks;
    // Not while our own edit is on its way; the line count first (reading the text is not free).
    if (!hunks || this.ours.has(f.uri.toString()) || doc.lineCount !== hunks.baseLineCount) return false;
    return doc.getText() === hunks.base && hunks.text() !== hunks.base;
  }

  private scrolled: NodeJS.Timeout | undefined;

  /** A file with many changes scrolled: its lenses again, once the scrolling pauses. */
  private onScroll(editor: vscode.TextEditor): void {
    const f = this.review?.find(editor.document.uri);
    if (!f?.hunks || f.hunks.left() <= MANY_LENSES) return;
    clearTimeout(this.scrolled);
    this.scrolled = setTimeout(() => this.lensesChanged.fire(), 50);
  }

  private onChange(event: vscode.TextDocumentChangeEvent): void {
    const review = this.review;
    if (!review || !event.contentChanges.length || this.ours.has(event.document.uri.toString())) return;
    const f = review.files.find((x) => x.hunks && x.uri.toString() === event.document.uri.toString());
    if (!f?.hunks || this.awayFromReview(f, event.document)) return;
    f.touched = true;
    for (const c of event.contentChanges) {
      f.hunks.onChange({ start: c.range.start.line, end: c.range.end.line,
                         newlines: (c.text.match(/\r\n|\r|\n/g) ?? []).length });
    }
    this.changed([f]);
  }

  /** Reviewed files shown again: one whose document went back to the base (its editor was
   * closed without saving) opens as the person left it. */
  private async onVisible(): Promise<void> {
    const review = this.review;
    if (!review) return;
    await this.serial(async () => {
      for (const editor of vscode.window.visibleTextEditors) {
        const f = review.find(editor.document.uri);
        if (f?.hunks && this.awayFromReview(f, editor.document)) await this.attached(f);
      }
    });
    this.changed();
  }
}

/** The row edits to send: as they are, or past MANY_EDITS one edit spanning them. */
function fewEdits(doc: vscode.TextDocument, edits: RowEdit[]): RowEdit[] {
  if (edits.length <= MANY_EDITS) return edits;
  return [oneEdit(edits, (start, end) => doc.getText(rowRange(doc, { start, end, text: "" })))];
}

/** A row edit's range in a document: whole lines; the last rows run to the document's end. */
function rowRange(doc: vscode.TextDocument, e: RowEdit): vscode.Range {
  const start = e.start >= doc.lineCount ? doc.lineAt(doc.lineCount - 1).range.end : new vscode.Position(e.start, 0);
  const end = e.end >= doc.lineCount ? doc.lineAt(doc.lineCount - 1).range.end : new vscode.Position(e.end, 0);
  return new vscode.Range(start, end);
}

/** A file's text on disk (UTF-8), or undefined when it cannot be read as such. */
async function readText(uri: vscode.Uri): Promise<string | undefined> {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(await vscode.workspace.fs.readFile(uri));
  } catch {
    return undefined;
  }
}
