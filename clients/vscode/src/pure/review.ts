// The review of an agent edit before it lands (no vscode import: unit-tested). One entry per
// file the LSP WorkspaceEdit touches; the person keeps all of them in one action (Enter), or
// unticks some first; what is kept is the edit filtered to those files, with its
// needsConfirmation annotations cleared so VS Code applies it without asking again.

export interface Position { line: number; character: number }
export interface TextEdit { range: { start: Position; end: Position }; newText: string }
export interface ChangeAnnotation { label: string; needsConfirmation?: boolean; description?: string }
export type DocumentChange =
  | { textDocument: { uri: string; version: number | null }; edits: TextEdit[] }
  | { kind: "create"; uri: string; annotationId?: string }
  | { kind: "delete"; uri: string; annotationId?: string }
  | { kind: "rename"; oldUri: string; newUri: string; annotationId?: string };
export interface WorkspaceEdit {
  documentChanges?: DocumentChange[];
  changes?: Record<string, TextEdit[]>;
  changeAnnotations?: Record<string, ChangeAnnotation>;
}

export type FileKind = "changed" | "created" | "deleted" | "renamed";

export interface ReviewFile {
  uri: string; // the file after the change (the deleted file for a delete)
  oldUri?: string; // a rename's source
  kind: FileKind;
  edits: number; // text edits in it
}

function uriOf(change: DocumentChange): string {
  if ("textDocument" in change) return change.textDocument.uri;
  return change.kind === "rename" ? change.newUri : change.uri;
}

/** The files an edit touches, in order, each once. */
export function reviewFiles(edit: WorkspaceEdit): ReviewFile[] {
  const files = new Map<string, ReviewFile>();
  const entry = (uri: string, kind: FileKind): ReviewFile => {
    let file = files.get(uri);
    if (!file) {
      file = { uri, kind, edits: 0 };
      files.set(uri, file);
    }
    return file;
  };
  for (const change of edit.documentChanges ?? []) {
    if ("textDocument" in change) {
      entry(change.textDocument.uri, "changed").edits += change.edits.length;
    } else if (change.kind === "create") {
      entry(change.uri, "created").kind = "created";
    } else if (change.kind === "delete") {
      entry(change.uri, "deleted").kind = "deleted";
    } else {
      const file = entry(change.newUri, "renamed");
      file.kind = "renamed";
      file.oldUri = change.oldUri;
    }
  }
  for (const [uri, edits] of Object.entries(edit.changes ?? {})) entry(uri, "changed").edits += edits.length;
  return [...files.values()];
}

/** The edit restricted to the kept files, asking for no further confirmation. */
export function keptEdit(edit: WorkspaceEdit, kept: ReadonlySet<string>): WorkspaceEdit {
  const out: WorkspaceEdit = {};
  if (edit.documentChanges) out.documentChanges = edit.documentChanges.filter((c) => kept.has(uriOf(c)));
  if (edit.changes) {
    out.changes = Object.fromEntries(Object.entries(edit.changes).filter(([uri]) => kept.has(uri)));
  }
  if (edit.changeAnnotations) {
    out.changeAnnotations = Object.fromEntries(Object.entries(edit.changeAnnotations)
      .map(([id, a]) => [id, { ...a, needsConfirmation: false }]));
  }
  return out;
}

/** A file as the person reads it: its path relative to the workspace folder. */
export function shownPath(uri: string, folder?: string): string {
  const path = decodeURIComponent(uri.replace(/^file:\/\//, ""));
  if (folder) {
    const root = decodeURIComponent(folder.replace(/^file:\/\//, "")).replace(/\/$/, "");
    if (path.startsWith(root + "/")) return path.slice(root.length + 1);
  }
  return path;
}

/** The line the picker shows for a file: "calc.py", "changed · 2 edits". */
export function describe(file: ReviewFile, folder?: string): { label: string; detail: string } {
  const name = shownPath(file.uri, folder);
  if (file.kind === "renamed" && file.oldUri) {
    return { label: name, detail: `renamed from ${shownPath(file.oldUri, folder)}` };
  }
  const edits = file.edits ? ` · ${file.edits} edit${file.edits === 1 ? "" : "s"}` : "";
  return { label: name, detail: `${file.kind}${edits}` };
}

/** The applyEdit answer's reason when not everything was kept (the server reads what
 * landed from the documents; this is what the person decided). */
export function leftOutReason(files: ReviewFile[], kept: ReadonlySet<string>, folder?: string): string {
  const names = (list: ReviewFile[]) => list.map((f) => shownPath(f.uri, folder)).join(", ");
  const keptFiles = files.filter((f) => kept.has(f.uri));
  const left = files.filter((f) => !kept.has(f.uri));
  if (keptFiles.length === 0) return "discarded in the review";
  return `kept ${names(keptFiles)}; left out ${names(left)}`;
}

/** The files ticked in the review picker. `update` takes the picker's selection and says
 * whether the person changed it (the picker also reports back what the extension set). */
export class Ticked {
  private uris: Set<string>;

  constructor(uris: Iterable<string>) {
    this.uris = new Set(uris);
  }

  get kept(): ReadonlySet<string> {
    return this.uris;
  }

  update(selected: Iterable<string>): boolean {
    const next = new Set(selected);
    if (next.size === this.uris.size && [...next].every((uri) => this.uris.has(uri))) return false;
    this.uris = next;
    return true;
  }
}

/** A file's outcome in the editor's review: its hunks and how many were kept (a created,
 * deleted or renamed file: 1 kept or 0), or why it could not be applied. */
export interface FileOutcome { uri: string; kind: FileKind; hunks?: number; kept: number; failed?: string }

/** The review's answer: whether everything was kept, and the one line that says what was
 * ("kept 1 of 2 changes in calc.py; kept README.md"); the server reads the rest from the
 * documents. */
export function outcome(files: FileOutcome[], folder?: string): { allKept: boolean; text: string } {
  const parts = files.map((f) => {
    const name = shownPath(f.uri, folder);
    const what = f.kind === "changed" ? name : `${f.kind} ${name}`;
    if (f.failed) return `could not apply ${what}: ${f.failed}`;
    if (f.hunks === undefined || f.hunks === 1) return `${f.kept ? "kept" : "undid"} ${what}`;
    if (f.kept === f.hunks) return `kept ${what} (${f.hunks} changes)`;
    if (f.kept === 0) return `undid ${what}`;
    return `kept ${f.kept} of ${f.hunks} changes in ${what}`;
  });
  const allKept = files.every((f) => !f.failed && f.kept === (f.hunks ?? 1));
  if (files.every((f) => !f.failed && f.kept === 0)) return { allKept, text: "discarded in the review" };
  return { allKept, text: parts.join("; ") };
}

/** What a save may do to a file's text, from VS Code's settings for its document: format it,
 * run code actions, trim trailing whitespace, add or trim the final newlines. */
export interface SaveSettings {
  formatOnSave?: boolean;
  codeActionsOnSave?: unknown; // {"source.fixAll": "explicit"} or, older, ["source.fixAll"] or {..: true}
  trimTrailingWhitespace?: boolean;
  insertFinalNewline?: boolean;
  trimFinalNewlines?: boolean;
}

export function saveMayChange(s: SaveSettings): boolean {
  const actions = s.codeActionsOnSave;
  const anyAction = Array.isArray(actions) ? actions.length > 0
    : typeof actions === "object" && actions !== null
      ? Object.values(actions).some((v) => v !== false && v !== "never") : false;
  return Boolean(s.formatOnSave || s.trimTrailingWhitespace || s.insertFinalNewline || s.trimFinalNewlines || anyAction);
}

/** A reviewed file that ends the review as it began: unmodified when the review read it (its
 * buffer was its file), its text again that text (every change undone, nothing else edited),
 * the file on disk still that text, and a save that cannot change it. It is saved back, so it
 * is not left modified, as Copilot Edits and Continue leave a file whose changes were all
 * rejected; any other file keeps its unsaved changes for the person to save or revert. */
export function saveBack(f: { cleanBefore: boolean; base: string; text: string; disk: string | undefined;
                              saveMayChange: boolean }): boolean {
  return f.cleanBefore && f.text === f.base && f.disk === f.base && !f.saveMayChange;
}
