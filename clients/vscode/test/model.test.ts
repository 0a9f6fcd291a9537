import assert from "node:assert/strict";
import { test } from "node:test";
import {
  applyEvent, applyResult, type ChatEvent, emptyModel, failTurn, fromHistory, restoreFailure,
  startTurn,
} from "../src/pure/model";
import { toView } from "../src/pure/view";

let seq = 0;
const ev = (kind: string, fields: Record<string, unknown> = {}, runId = "r1"): ChatEvent =>
  ({ sessionId: "s1", runId, seq: ++seq, kind, ...fields });

test("text deltas stream into one part; tool activity interleaves, collapsed with arguments", () => {
  seq = 0;
  const model = emptyModel();
  const turn = startTurn(model, "fix add");
  applyEvent(model, ev("text", { text: "Let me " }));
  applyEvent(model, ev("text", { text: "look." }));
  applyEvent(model, ev("toolCall", { callId: "c1", name: "read_file", arguments: '{"path":"calc.py"}' }));
  assert.equal(turn.status, "running read_file…");
  applyEvent(model, ev("toolResult", { callId: "c1", name: "read_file", ok: true, summary: "6 lines" }));
  applyEvent(model, ev("text", { text: "Fixed." }));
  assert.equal(model.sessionId, "s1");
  assert.equal(turn.runId, "r1");
  assert.deepEqual(turn.parts, [
    { type: "text", text: "Let me look." },
    { type: "tool", callId: "c1", name: "read_file", arguments: '{"path":"calc.py"}', ok: true,
      summary: "6 lines" },
    { type: "text", text: "Fixed." },
  ]);
  const view = toView(model);
  assert.equal(view.running, true);
  const tool = view.turns[0].parts[1];
  assert.ok(tool.type === "tool" && tool.arguments === '{\n  "path": "calc.py"\n}');
});

test("late or repeated events are ignored; events of an unknown run are dropped", () => {
  seq = 0;
  const model = emptyModel();
  const turn = startTurn(model, "hi");
  const first = ev("text", { text: "a" });
  applyEvent(model, first);
  assert.equal(applyEvent(model, first), undefined);
  assert.equal(applyEvent(model, ev("text", { text: "x" }, "other-run")), undefined);
  assert.deepEqual(turn.parts, [{ type: "text", text: "a" }]);
});

test("done ends the turn; cancelled and errors are shown as such", () => {
  seq = 0;
  const model = emptyModel();
  const turn = startTurn(model, "long");
  applyEvent(model, ev("text", { text: "Once" }));
  applyEvent(model, ev("done", { stopReason: "cancelled" }));
  assert.equal(turn.state, "cancelled");
  assert.equal(turn.status, "cancelled");
  const second = startTurn(model, "again");
  applyEvent(model, ev("error", { message: "The API key was rejected", hint: "Set API Key" }, "r2"));
  applyEvent(model, ev("done", { stopReason: "error" }, "r2"));
  assert.equal(second.state, "error");
  assert.deepEqual(second.parts.at(-1), { type: "note", level: "error",
                                          text: "The API key was rejected — Set API Key" });
});

test("the chat result tells the truth about the edit", () => {
  seq = 0;
  const model = emptyModel();
  const accepted = startTurn(model, "fix add");
  applyEvent(model, ev("edit", { files: [{ path: "/w/calc.py", kind: "update", insertions: 1, deletions: 1 }] }));
  assert.match(accepted.editOutcome ?? "", /^Edit proposed: calc.py \(\+1 −1\)/);
  const change = { uri: "file:///w/calc.py", kind: "update", insertions: 1, deletions: 1 };
  applyResult(model, accepted, { sessionId: "s1", runId: "r1", stopReason: "done", changes: [change],
                                 applied: true });
  assert.equal(accepted.editOutcome, "Edit applied: calc.py (+1 −1).");
  assert.equal(accepted.state, "done");
  const discarded = startTurn(model, "square mul");
  applyResult(model, discarded, { stopReason: "done", changes: [change], applied: false,
                                  failureReason: "discarded in the refactor preview" });
  assert.equal(discarded.editOutcome,
               "Edit not applied (discarded in the refactor preview): calc.py (+1 −1) left unchanged.");
  assert.doesNotMatch(accepted.status, /refactor preview/);
  const none = startTurn(model, "hello");
  applyResult(model, none, { stopReason: "done", text: "Hi!", applied: null });
  assert.equal(none.editOutcome, undefined);
  assert.deepEqual(none.parts, [{ type: "text", text: "Hi!" }]);
});

test("a failed request ends the turn with the reason", () => {
  const model = emptyModel();
  const turn = startTurn(model, "x");
  failTurn(turn, "AgentLS could not run this request: busy");
  assert.equal(turn.state, "error");
  assert.equal(toView(model).running, false);
});

test("history becomes turns: user prompts, assistant text, tool calls with results", () => {
  const model = fromHistory("s9", [
    { kind: "message", role: "system", content: "You are…" },
    { kind: "message", role: "user", content: "fix add" },
    { kind: "message", role: "assistant", content: "Reading.",
      toolCalls: [{ id: "c1", name: "read_file", arguments: "{}" }] },
    { kind: "message", role: "tool", toolCallId: "c1", content: "def add…\nmore" },
    { kind: "message", role: "assistant", content: "Done." },
    { kind: "summary", role: "user", content: "summary of older messages" },
    { kind: "message", role: "user", content: "thanks",
      notes: ["the person rejected your changes to calc.py"] },
    { kind: "message", role: "assistant", toolCalls: [{ id: "c2", name: "shell_exec", arguments: "{}" }] },
    { kind: "message", role: "tool", toolCallId: "c2", content: '{"ok": false, "error": "denied"}' },
  ]);
  assert.equal(model.sessionId, "s9");
  assert.equal(model.turns.length, 2);
  assert.deepEqual(model.turns[0].parts, [
    { type: "text", text: "Reading." },
    { type: "tool", callId: "c1", name: "read_file", arguments: "{}", ok: true, summary: "def add…" },
    { type: "text", text: "\n\nDone." },
  ]);
  assert.equal(model.turns[1].prompt, "thanks");
  assert.deepEqual(model.turns[1].parts, [
    { type: "note", level: "info", text: "the person rejected your changes to calc.py" },
    { type: "tool", callId: "c2", name: "shell_exec", arguments: "{}", ok: false,
      summary: "failed: denied" },
  ]);
  assert.ok(model.turns.every((t) => t.state === "done"));
});

test("a failed restore forgets the session only when the server does not have it", () => {
  const notFound = Object.assign(new Error("session not found: s1"), { code: -32602 });
  assert.equal(restoreFailure(notFound, 1, 3), "forget");
  const internal = Object.assign(new Error("database is locked"), { code: -32603 });
  assert.equal(restoreFailure(internal, 1, 3), "retry");
  assert.equal(restoreFailure(internal, 2, 3), "retry");
  assert.equal(restoreFailure(internal, 3, 3), "keep");
  assert.equal(restoreFailure(new Error("the AgentLS server is not running"), 3, 3), "keep");
  assert.equal(restoreFailure("a string", 1, 3), "retry");
});
