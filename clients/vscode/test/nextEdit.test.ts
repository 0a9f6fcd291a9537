import assert from "node:assert/strict";
import { test } from "node:test";
import { readSettings, toServerConfig } from "../src/pure/config";
import {
  drawnOf, endAfter, firstEdit, hintOf, onScreen, statusLabel, suggestionId, type WireEdit,
} from "../src/pure/nextEdit";

const edit: WireEdit = {
  text: "total",
  textDocument: { uri: "file:///p/scale.py", version: 2 },
  range: { start: { line: 3, character: 27 }, end: { line: 3, character: 32 } },
  command: { title: "Accept next edit", command: "agentls.nextEdit.accept", arguments: ["ne-1"] },
};

test("the answer's one edit, or none", () => {
  assert.deepEqual(firstEdit({ edits: [edit] }), edit);
  assert.equal(firstEdit({ edits: [] }), undefined);
  assert.equal(firstEdit(null), undefined);
  assert.equal(firstEdit({ edits: [{ text: 1 }] }), undefined);
});

test("a replacement is struck out and its text shown after it; lines are counted", () => {
  assert.deepEqual(drawnOf(edit), { strikes: true, label: "total", moreLines: 0, full: "total" });
  const insertion = { ...edit, text: "x = 1\ny = 2\n",
                      range: { start: { line: 1, character: 0 }, end: { line: 1, character: 0 } } };
  const drawn = drawnOf(insertion);
  assert.equal(drawn.strikes, false);
  assert.equal(drawn.moreLines, 2);
  assert.equal(drawn.label, "x = 1 ⏎ … (+2 lines)");
});

test("on screen, the hint, the id, the cursor after", () => {
  assert.equal(onScreen(3, [{ start: 0, end: 20 }]), true);
  assert.equal(onScreen(64, [{ start: 0, end: 20 }, { start: 30, end: 40 }]), false);
  assert.equal(hintOf(64), "  next edit at line 65 (Tab)");
  assert.equal(suggestionId(edit), "ne-1");
  assert.deepEqual(endAfter(edit), { line: 3, character: 32 });
  assert.deepEqual(endAfter({ ...edit, text: "a\nbc" }), { line: 4, character: 2 });
});

test("the status bar item says on, off, waiting and errors", () => {
  assert.match(statusLabel(false, "idle", "").tooltip, /are off/);
  assert.match(statusLabel(true, "off", "").tooltip, /no next-edit model/);
  const error = statusLabel(true, "error", "cannot reach http://x");
  assert.equal(error.warning, true);
  assert.match(error.tooltip, /cannot reach/);
  assert.equal(statusLabel(true, "idle", "").text, "$(sparkle) Next edit");
});

test("the settings reach the server as next_edit", () => {
  const defaults = readSettings((_key, fallback) => fallback);
  assert.equal(toServerConfig(defaults, false).next_edit, undefined);
  assert.deepEqual(toServerConfig({ ...defaults, nextEditModel: " zeta " }, false).next_edit,
                   { model: "zeta" });
  assert.deepEqual(toServerConfig({ ...defaults, nextEditEnabled: false }, false).next_edit,
                   { enabled: false });
});
