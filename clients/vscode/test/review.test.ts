import assert from "node:assert/strict";
import { test } from "node:test";
import {
  describe, keptEdit, leftOutReason, outcome, reviewFiles, saveBack, saveMayChange, Ticked, type WorkspaceEdit,
} from "../src/pure/review";

const ROOT = "file:///work/project";
const edit: WorkspaceEdit = {
  documentChanges: [
    { textDocument: { uri: `${ROOT}/calc.py`, version: 3 }, edits: [
      { range: { start: { line: 1, character: 11 }, end: { line: 1, character: 12 } }, newText: "+",
        annotationId: "a" } as never,
      { range: { start: { line: 5, character: 0 }, end: { line: 5, character: 0 } }, newText: "x\n" }] },
    { kind: "create", uri: `${ROOT}/new.py`, annotationId: "a" },
    { textDocument: { uri: `${ROOT}/new.py`, version: null }, edits: [
      { range: { start: { line: 0, character: 0 }, end: { line: 0, character: 0 } }, newText: "print()\n" }] },
    { kind: "delete", uri: `${ROOT}/old.txt` },
    { kind: "rename", oldUri: `${ROOT}/a.py`, newUri: `${ROOT}/b.py` },
  ],
  changeAnnotations: { a: { label: "AgentLS", needsConfirmation: true } },
};

test("every file of an edit, once, with its kind and edit count", () => {
  assert.deepEqual(reviewFiles(edit), [
    { uri: `${ROOT}/calc.py`, kind: "changed", edits: 2 },
    { uri: `${ROOT}/new.py`, kind: "created", edits: 1 },
    { uri: `${ROOT}/old.txt`, kind: "deleted", edits: 0 },
    { uri: `${ROOT}/b.py`, kind: "renamed", edits: 0, oldUri: `${ROOT}/a.py` },
  ]);
  assert.deepEqual(describe(reviewFiles(edit)[0], ROOT), { label: "calc.py", detail: "changed · 2 edits" });
  assert.deepEqual(describe(reviewFiles(edit)[3], ROOT), { label: "b.py", detail: "renamed from a.py" });
});

test("the kept edit holds only the kept files and asks for no confirmation", () => {
  const kept = keptEdit(edit, new Set([`${ROOT}/new.py`, `${ROOT}/b.py`]));
  assert.deepEqual(kept.documentChanges?.map((c) => ("textDocument" in c ? "edit " : c.kind + " ") +
    ("textDocument" in c ? c.textDocument.uri : c.kind === "rename" ? c.newUri : c.uri)), [
    `create ${ROOT}/new.py`, `edit ${ROOT}/new.py`, `rename ${ROOT}/b.py`]);
  assert.equal(kept.changeAnnotations?.a.needsConfirmation, false);
  assert.equal(edit.changeAnnotations?.a.needsConfirmation, true, "the original is left as it was");
});

test("the plain changes map is filtered too", () => {
  const plain: WorkspaceEdit = { changes: { [`${ROOT}/a.py`]: [], [`${ROOT}/b.py`]: [] } };
  assert.deepEqual(Object.keys(keptEdit(plain, new Set([`${ROOT}/b.py`])).changes ?? {}), [`${ROOT}/b.py`]);
  assert.deepEqual(reviewFiles(plain).map((f) => f.kind), ["changed", "changed"]);
});

test("the answer's reason says what was kept and what was left out", () => {
  const files = reviewFiles(edit);
  assert.equal(leftOutReason(files, new Set([`${ROOT}/calc.py`]), ROOT),
               "kept calc.py; left out new.py, old.txt, b.py");
  assert.equal(leftOutReason(files, new Set(), ROOT), "discarded in the review");
});

test("the picker's ticks change only when the person changes them", () => {
  const ticked = new Ticked([`${ROOT}/calc.py`, `${ROOT}/README.md`]);
  assert.equal(ticked.update([`${ROOT}/README.md`, `${ROOT}/calc.py`]), false, "the same files, in another order");
  assert.equal(ticked.update([`${ROOT}/calc.py`]), true, "README.md unticked");
  assert.deepEqual([...ticked.kept], [`${ROOT}/calc.py`]);
  assert.equal(ticked.update([`${ROOT}/calc.py`]), false, "the picker reporting back what was drawn");
  assert.equal(ticked.update([]), true);
  assert.equal(ticked.kept.size, 0);
});

test("the editor review's answer says what was kept, file by file", () => {
  const calc = { uri: `${ROOT}/calc.py`, kind: "changed" as const, hunks: 2, kept: 1 };
  const readme = { uri: `${ROOT}/README.md`, kind: "changed" as const, hunks: 1, kept: 1 };
  assert.deepEqual(outcome([calc, readme], ROOT),
                   { allKept: false, text: "kept 1 of 2 changes in calc.py; kept README.md" });
  assert.deepEqual(outcome([{ ...calc, kept: 2 }, readme], ROOT),
                   { allKept: true, text: "kept calc.py (2 changes); kept README.md" });
  assert.deepEqual(outcome([{ ...calc, kept: 0 }, { uri: `${ROOT}/new.py`, kind: "created", kept: 0 }], ROOT),
                   { allKept: false, text: "discarded in the review" });
  assert.deepEqual(outcome([{ uri: `${ROOT}/old.txt`, kind: "deleted", kept: 1 }, { ...calc, kept: 0 }], ROOT),
                   { allKept: false, text: "kept deleted old.txt; undid calc.py" });
  assert.equal(outcome([{ ...readme, failed: "VS Code could not apply it", kept: 0 }], ROOT).text,
               "could not apply README.md: VS Code could not apply it");
});

test("a file the review leaves as it found it is saved back, any other stays modified", () => {
  const base = "a = 1\nb = 2\n";
  const asFound = { cleanBefore: true, base, text: base, disk: base, saveMayChange: false };
  assert.equal(saveBack(asFound), true, "unmodified before, every change undone: not left modified");
  assert.equal(saveBack({ ...asFound, cleanBefore: false }), false, "the person's unsaved changes before the review stay unsaved");
  assert.equal(saveBack({ ...asFound, text: "a = 1 * 2\nb = 2\n" }), false, "a kept change is the person's to save");
  assert.equal(saveBack({ ...asFound, disk: "a = 3\nb = 2\n" }), false, "the file changed on disk meanwhile: not overwritten");
  assert.equal(saveBack({ ...asFound, disk: undefined }), false, "not readable as UTF-8: not saved");
  assert.equal(saveBack({ ...asFound, saveMayChange: true }), false, "a save that may reformat it would change the file");
});

test("a save may change a file when VS Code formats, fixes or trims on save", () => {
  assert.equal(saveMayChange({}), false);
  assert.equal(saveMayChange({ formatOnSave: false, codeActionsOnSave: {}, trimTrailingWhitespace: false }), false);
  assert.equal(saveMayChange({ formatOnSave: true }), true);
  assert.equal(saveMayChange({ trimTrailingWhitespace: true }), true);
  assert.equal(saveMayChange({ insertFinalNewline: true }), true);
  assert.equal(saveMayChange({ trimFinalNewlines: true }), true);
  assert.equal(saveMayChange({ codeActionsOnSave: { "source.fixAll": "explicit" } }), true);
  assert.equal(saveMayChange({ codeActionsOnSave: { "source.organizeImports": true } }), true);
  assert.equal(saveMayChange({ codeActionsOnSave: { "source.fixAll": "never", "source.organizeImports": false } }), false);
  assert.equal(saveMayChange({ codeActionsOnSave: ["source.fixAll"] }), true);
  assert.equal(saveMayChange({ codeActionsOnSave: [] }), false);
});
