import assert from "node:assert/strict";
import { test } from "node:test";
import { applyEdits, applyRowEdits, FileReview, fileHunks, inCurrentRows, oneEdit, splitLines } from "../src/pure/hunks";
import type { TextEdit } from "../src/pure/review";

const edit = (l1: number, c1: number, l2: number, c2: number, newText: string): TextEdit =>
  ({ range: { start: { line: l1, character: c1 }, end: { line: l2, character: c2 } }, newText });

const BASE = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n";
// As the server sends them (lsp/edits.py): one edit per changed region, cut to the characters.
const EDITS = [
  edit(1, 13, 1, 14, "+"), // return a + b
  edit(4, 0, 4, 0, "# the product\n"), // a line inserted before def mul
  edit(5, 15, 5, 16, "a"), // return a * a
];

test("lines keep their endings; positions count UTF-16 code units", () => {
  assert.deepEqual(splitLines("a\r\nb\rc\nd"), ["a\r\n", "b\r", "c\n", "d"]);
  assert.deepEqual(splitLines(""), []);
  assert.equal(applyEdits("é😀x\n", [edit(0, 3, 0, 4, "y")]), "é😀y\n");
  assert.equal(applyEdits("ab\n", [edit(0, 9, 0, 9, "!")]), "ab!\n", "a position past its line: the line's end");
  assert.equal(applyEdits("ab\n", [edit(0, 2, 5, 0, "!")]), "ab!", "past the text: the text's end");
});

test("the edits grouped by the rows they touch are the server's hunks", () => {
  const { proposed, hunks } = fileHunks(BASE, EDITS);
  assert.equal(proposed, "def add(a, b):\n    return a + b\n\n\n# the product\ndef mul(a, b):\n    return a * a\n");
  assert.deepEqual(hunks, [
    { index: 1, oldStart: 1, old: ["    return a - b\n"], new: ["    return a + b\n"] },
    { index: 2, oldStart: 4, old: [], new: ["# the product\n"] },
    { index: 3, oldStart: 5, old: ["    return a * b\n"], new: ["    return a * a\n"] },
  ]);
});

test("an insertion at the very end, moved before the final newline, is a pure insertion", () => {
  const { hunks } = fileHunks("a\nb\n", [edit(1, 1, 1, 1, "\nc")]);
  assert.deepEqual(hunks, [{ index: 1, oldStart: 2, old: [], new: ["c\n"] }]);
  const deletion = fileHunks("a\nb\nc\n", [edit(1, 0, 2, 0, "")]);
  assert.deepEqual(deletion.hunks, [{ index: 1, oldStart: 1, old: ["b\n"], new: [] }]);
});

test("the review's text shows each hunk's old lines above its new ones", () => {
  const { hunks } = fileHunks(BASE, EDITS);
  const review = new FileReview(BASE, hunks);
  const open = applyRowEdits(BASE, review.openEdits());
  assert.equal(open, review.text());
  assert.equal(open, "def add(a, b):\n    return a - b\n    return a + b\n\n\n# the product\ndef mul(a, b):\n" +
                     "    return a * b\n    return a * a\n");
  assert.deepEqual(review.decorations(), { removed: [[1, 2], [7, 8]], added: [[2, 3], [5, 6], [8, 9]] });
  assert.deepEqual(review.region(2), { start: 7, end: 9 });
  assert.equal(review.at(8), 2);
  assert.equal(review.at(0), undefined);
  assert.equal(review.next(0, 1), 0);
  assert.equal(review.next(7, 1), 0, "past the last, the first again");
  assert.equal(review.next(7, -1), 1);
});

test("keeping one hunk and undoing another leaves the base with the kept one", () => {
  const { hunks } = fileHunks(BASE, EDITS);
  const review = new FileReview(BASE, hunks);
  let text = review.text();
  for (const [i, keep] of [[2, true], [0, false], [1, true]] as const) {
    const { edit: e } = review.decide(i, keep);
    if (e) text = applyRowEdits(text, [e]);
    assert.equal(text, review.text(), `after deciding hunk ${i + 1}`);
  }
  assert.equal(text, "def add(a, b):\n    return a - b\n\n\n# the product\ndef mul(a, b):\n    return a * a\n");
  assert.deepEqual(review.states, ["undone", "kept", "kept"]);
  assert.equal(review.left(), 0);
  assert.deepEqual(review.decide(0, true), {}, "a decided hunk stays decided");
});

test("undo after the review takes back one kept hunk per step", () => {
  const { hunks } = fileHunks(BASE, EDITS);
  const review = new FileReview(BASE, hunks);
  let text = review.text();
  for (const i of [0, 1, 2]) text = applyRowEdits(text, [review.decide(i, i !== 1).edit!].filter(Boolean));
  const lines = splitLines(text);
  const { restore, steps } = review.keptSteps((i) => {
    const { start, end } = review.region(i);
    return lines.slice(start, end).join("");
  });
  const restored = applyRowEdits(text, restore);
  assert.equal(restored, BASE, "the kept regions back to the old lines");
  const states = [restored];
  for (const s of steps) states.push(applyRowEdits(states[states.length - 1], [s]));
  assert.equal(states[states.length - 1], text, "then each kept hunk again: the same text");
  assert.equal(states[1], "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a * b\n",
               "undoing the last step leaves the first kept hunk only");
});

test("a last line without a line ending shown above the new lines, and put back as it was", () => {
  const base = "x\ny";
  const { hunks, proposed } = fileHunks(base, [edit(1, 0, 1, 1, "z")]);
  assert.equal(proposed, "x\nz");
  const review = new FileReview(base, hunks);
  assert.equal(review.text(), "x\ny\nz");
  const undone = applyRowEdits(review.text(), [review.decide(0, false).edit!]);
  assert.equal(undone, base);
});

test("the person's typing moves the regions below it and marks the one it touches", () => {
  const { hunks } = fileHunks(BASE, EDITS);
  const review = new FileReview(BASE, hunks);
  review.onChange({ start: 0, end: 0, newlines: 2 }); // two lines typed at the top
  assert.deepEqual(review.region(0), { start: 3, end: 5 });
  review.onChange({ start: 4, end: 4, newlines: 0 }); // a word typed in hunk 1's new line
  assert.deepEqual(review.edited, [true, false, false]);
  assert.match(review.decide(0, false).refused ?? "", /edited during the review/);
  assert.deepEqual(review.decide(0, true), { edit: undefined }, "kept as the person left it");
  assert.deepEqual(review.region(2), { start: 9, end: 11 });
});

test("2,000 hunks in 20,000 lines", () => {
  const base = Array.from({ length: 20_000 }, (_, k) => `line ${k}\n`).join("");
  const edits = Array.from({ length: 2_000 }, (_, k) => edit(k * 10 + 5, 5, k * 10 + 5, 5 + String(k * 10 + 5).length, "changed"));
  const { hunks } = fileHunks(base, edits);
  const review = new FileReview(base, hunks);
  review.openEdits();
  review.decorations();
  review.decide(1000, true);
  assert.equal(hunks.length, 2_000);
  assert.equal(review.left(), 1_999);
  assert.deepEqual(review.region(1000), { start: 10_005 + 1000, end: 10_005 + 1001 });
  assert.deepEqual(review.region(1001), { start: 10_015 + 1000, end: 10_015 + 1002 }, "the kept hunk above adds no row");
});

test("keep all (or undo all) of a file is one edit of the document as it is", () => {
  for (const keep of [true, false]) {
    const { hunks, proposed } = fileHunks(BASE, EDITS);
    const review = new FileReview(BASE, hunks);
    const open = review.text();
    const edits = review.pending().flatMap((i) => review.decide(i, keep).edit ?? []);
    assert.equal(applyRowEdits(open, inCurrentRows(edits)), keep ? proposed : BASE);
  }
});

test("the stamp moves with every change of the regions, not with reading them", () => {
  const { hunks } = fileHunks(BASE, EDITS);
  const review = new FileReview(BASE, hunks);
  const seen = [review.stamp];
  review.decorations();
  review.text();
  assert.equal(review.stamp, seen[0], "reading draws nothing new");
  review.decide(0, true);
  seen.push(review.stamp);
  review.decide(0, true); // decided already: nothing changes
  assert.equal(review.stamp, seen[1]);
  review.onChange({ start: 0, end: 0, newlines: 1 });
  seen.push(review.stamp);
  review.reset();
  seen.push(review.stamp);
  assert.equal(new Set(seen).size, 4, "each change a new stamp");
});

test("the base's line count is an editor's: one more than its line endings", () => {
  const count = (base: string) => new FileReview(base, []).baseLineCount;
  assert.equal(count(BASE), splitLines(BASE).length + 1);
  assert.equal(count("a"), 1);
  assert.equal(count(""), 1);
  assert.equal(count("a\r\nb\rc\n"), 4);
});

test("many row edits as one: the rows between them sent again as they are", () => {
  const { hunks } = fileHunks(BASE, EDITS);
  const review = new FileReview(BASE, hunks);
  const open = review.text();
  const lines = splitLines(open);
  const textOf = (start: number, end: number) => lines.slice(start, end).join("");
  const edits = review.pending().flatMap((i) => review.decide(i, true).edit ?? []);
  const now = inCurrentRows(edits);
  const one = oneEdit(now, textOf);
  assert.equal(applyRowEdits(open, [one]), applyRowEdits(open, now));
  assert.deepEqual([one.start, one.end], [Math.min(...now.map((e) => e.start)), Math.max(...now.map((e) => e.end))]);
  const base = splitLines(BASE);
  const opening = new FileReview(BASE, hunks).openEdits();
  assert.equal(applyRowEdits(BASE, [oneEdit(opening, (s, e) => base.slice(s, e).join(""))]), open,
               "the review's text in one edit of the base");
});
