import assert from "node:assert/strict";
import { test } from "node:test";
import { laidOutRows } from "../src/pure/floor";

test("a text laid out as the review shows it: each added line and the removed one above it", () => {
  const lines = ["a = 0", "b = 1", "b = 1 * 2", "c = 2", "d = 3", "d = 3 * 2"];
  assert.deepEqual(laidOutRows(lines, (l) => l.endsWith(" * 2")),
                   { removed: [[1, 2], [4, 5]], added: [[2, 3], [5, 6]] });
  assert.deepEqual(laidOutRows(["x * 2", "y"], (l) => l.endsWith(" * 2")), { removed: [], added: [] },
                   "a first line has no line above it to be the removed one");
});
