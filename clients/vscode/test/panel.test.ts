import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import { editOutcomeClass, formatSize, mentionBefore } from "../src/panel/text";

const EXT = path.resolve(__dirname, "../..");

test("a chip's size reads in B, KB or MB", () => {
  assert.equal(formatSize(512), "512 B");
  assert.equal(formatSize(1536), "1.5 KB");
  assert.equal(formatSize(2 * 1024 * 1024), "2.0 MB");
});

test("a turn's edit line is classed by what it says", () => {
  assert.equal(editOutcomeClass("Edit applied: 2 files"), "applied");
  assert.equal(editOutcomeClass("Edit not applied: you rejected it"), "discarded");
  assert.equal(editOutcomeClass("Edit proposed: waiting for your review"), "proposed");
});

test("the mention before the caret: @ or # at the start or after a space, up to the caret", () => {
  assert.deepEqual(mentionBefore("#fi", 3), { at: 0, trigger: "#", query: "fi" });
  assert.deepEqual(mentionBefore("why is @pars slow", 12), { at: 7, trigger: "@", query: "pars" });
  assert.deepEqual(mentionBefore("why #", 5), { at: 4, trigger: "#", query: "" });
  assert.equal(mentionBefore("mail a@b", 8), null); // not after a space
  assert.equal(mentionBefore("#file done", 10), null); // a space since the trigger
});

test("the panel's script is bundled for the browser into dist/panel.js, which the .vsix carries", () => {
  const bundle = fs.readFileSync(path.join(EXT, "dist/panel.js"), "utf8");
  assert.match(bundle, /acquireVsCodeApi\(\)/);
  assert.doesNotMatch(bundle, /\brequire\(/); // a webview has no module loader
  const ignore = fs.readFileSync(path.join(EXT, ".vscodeignore"), "utf8").split("\n");
  assert.ok(ignore.includes("!dist/panel.js"), ".vscodeignore keeps dist/panel.js in the .vsix");
  const host = fs.readFileSync(path.join(EXT, "src/panel.ts"), "utf8");
  assert.match(host, /joinPath\(dist, "panel\.js"\)/);
  assert.match(host, /<script nonce="\$\{nonce\}" src="\$\{script\}">/);
});
