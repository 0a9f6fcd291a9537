import assert from "node:assert/strict";
import { test } from "node:test";
import { renderMarkdown } from "../src/pure/markdown";
import { applyEvent, type ChatEvent, emptyModel, startTurn } from "../src/pure/model";
import { StreamingMarkdown } from "../src/pure/stream";
import { type PanelOp, ViewSync } from "../src/pure/view";

const ANSWER = [
  "Here is the plan.", "", "1. read the file", "2. fix it", "", "```python",
  "def add(a, b):", "    return a + b", "```", "", "Then **run** the tests:", "", "```",
  "pytest -q", "```", "", "- one", "- two", "", "Done.",
].join("\n");

/** What the webview would hold after applying every update (blocks + current tail). */
function replay(chunks: string[]): { blocks: string; shown: string; stream: StreamingMarkdown;
                                     codeTail: string } {
  const stream = new StreamingMarkdown();
  let blocks = "";
  let tail = "";
  let codeTail = "";
  for (const chunk of chunks) {
    stream.push(chunk);
    const u = stream.take();
    blocks += u.append;
    if (u.tail !== undefined) {
      tail = u.tail === null ? "" : u.tail.kind === "html" ? u.tail.html : "";
      codeTail = u.tail?.kind === "code" ? u.tail.code : "";
    }
    if (u.codeAppend) codeTail += u.codeAppend;
  }
  return { blocks, shown: blocks + tail, stream, codeTail };
}

test("streamed in any chunk size, finished blocks plus the tail equal the whole rendered at once", () => {
  for (const size of [1, 2, 3, 7, 16, 1000]) {
    const chunks: string[] = [];
    for (let i = 0; i < ANSWER.length; i += size) chunks.push(ANSWER.slice(i, i + size));
    const { blocks, shown, stream } = replay(chunks);
    assert.equal(shown, renderMarkdown(ANSWER), `chunk size ${size}`);
    const end = stream.finish(); // the tail becomes a finished block
    assert.ok("append" in end && blocks + end.append === renderMarkdown(ANSWER), `chunk size ${size}`);
  }
});

test("an open code fence streams as plain code appended, and is highlighted once closed", () => {
  const stream = new StreamingMarkdown();
  stream.push("Look:\n\n```python\ndef f");
  let u = stream.take();
  assert.match(u.append, /<p>Look:<\/p>/);
  assert.deepEqual(u.tail, { kind: "code", lang: "python", code: "def f" });
  stream.push("():\n    pass\n");
  u = stream.take();
  assert.equal(u.tail, undefined);
  assert.equal(u.codeAppend, "():\n    pass\n");
  stream.push("```\n");
  u = stream.take();
  assert.match(u.append, /<span class="hljs-keyword">def<\/span>/);
  assert.match(u.append, /data-action="apply"/);
  assert.equal(u.tail, null);
});

test("an answer that ends inside a fence, or splits a loose list, is rendered whole at the end", () => {
  const open = new StreamingMarkdown();
  open.push("```js\nlet x = 1;\n");
  open.take();
  assert.deepEqual(open.finish(), { replace: renderMarkdown("```js\nlet x = 1;\n") });
  const loose = new StreamingMarkdown();
  loose.push("- a\n\n- b\n");
  loose.take();
  const end = loose.finish();
  assert.ok("append" in end || end.replace === renderMarkdown("- a\n\n- b\n"));
});

test("the tail re-rendered per chunk stays one block: its size does not grow with the answer", () => {
  const stream = new StreamingMarkdown();
  let largest = 0;
  for (let i = 0; i < 500; i++) {
    stream.push(`Paragraph ${i} has some words in it.\n\n`);
    const u = stream.take();
    const tail = u.tail && u.tail.kind === "html" ? u.tail.html.length : 0;
    largest = Math.max(largest, tail, u.append.length);
  }
  assert.ok(largest < 200, `largest update ${largest} characters`);
});

let seq = 0;
const ev = (kind: string, fields: Record<string, unknown> = {}): ChatEvent =>
  ({ sessionId: "s1", runId: "r1", seq: ++seq, kind, ...fields });

test("ViewSync: a streaming turn gets appends only; earlier turns are never sent again", () => {
  seq = 0;
  const model = emptyModel("s1");
  const old = startTurn(model, "earlier");
  old.state = "done";
  old.parts.push({ type: "text", text: "An **old** answer." });
  const sync = new ViewSync();
  const view = sync.full(model);
  assert.equal(view.turns.length, 1);
  const turn = startTurn(model, "now");
  const ops: PanelOp[] = sync.changes(model, turn);
  assert.deepEqual(ops.map((o) => o.op), ["turn", "running"]);
  applyEvent(model, ev("text", { text: "First paragraph.\n\nSecond" }));
  const streamed = sync.changes(model, turn);
  assert.deepEqual(streamed.map((o) => o.op), ["part", "footer"]);
  applyEvent(model, ev("text", { text: " one.\n\nThird" }));
  const more = sync.changes(model, turn);
  assert.deepEqual(more.map((o) => o.op), ["md"]);
  const md = more[0];
  assert.ok(md.op === "md" && md.append.includes("Second one.") && !md.append.includes("First"));
  applyEvent(model, ev("toolCall", { callId: "c1", name: "read_file", arguments: "{}" }));
  const tool = sync.changes(model, turn);
  assert.deepEqual(tool.map((o) => o.op), ["part", "footer"]);
  applyEvent(model, ev("toolResult", { callId: "c1", ok: true, summary: "3 lines" }));
  assert.deepEqual(sync.changes(model, turn).map((o) => o.op), ["part"]);
  applyEvent(model, ev("done", { stopReason: "done" }));
  const end = sync.changes(model, turn);
  assert.deepEqual(end.map((o) => o.op), ["md", "footer", "running"]);
  assert.ok(end.every((o) => !("turn" in o) || o.turn === turn.id));
});

test("the server's turn event puts chips on the turn and says which model answered", () => {
  seq = 0;
  const model = emptyModel("s1");
  const sync = new ViewSync();
  sync.full(model);
  const turn = startTurn(model, "look at #file:calc.py");
  sync.changes(model, turn);
  applyEvent(model, ev("turn", {
    prompt: "look at #file:calc.py", model: "scripted-model", mode: "edit",
    attachments: [{ kind: "file", name: "calc.py", lines: 7, size: 120 }],
    refused: [{ kind: "url", name: "https://example.com", reason: "no network" }],
    notes: ["big.log was trimmed to 200 KB"],
  }));
  const ops = sync.changes(model, turn);
  assert.deepEqual(ops.map((o) => o.op), ["part", "head", "footer"]);
  const head = ops[1];
  assert.ok(head.op === "head" && head.chips[0].name === "calc.py" && head.refused[0].reason === "no network");
  const footer = ops[2];
  assert.ok(footer.op === "footer" && footer.answeredBy === "scripted-model · edit");
  assert.deepEqual(turn.parts, [{ type: "note", level: "info", text: "big.log was trimmed to 200 KB" }]);
});
