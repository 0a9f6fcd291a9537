import assert from "node:assert/strict";
import { test } from "node:test";
import {
  applyEvent, applyResult, cancelRefused, type ChatEvent, emptyModel, failTurn, fromTurns, prependTurns,
  restoreFailure, startTurn, took, type TurnRecord,
} from "../src/pure/model";
import { EarlierTurns, type TurnsPage } from "../src/pure/earlier";
import { ViewSync } from "../src/pure/view";

const toView = (model: Parameters<ViewSync["full"]>[0]) => new ViewSync().full(model);

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
  assert.doesNotMatch(accepted.status, /review/);
  const partial = startTurn(model, "two files");
  applyResult(model, partial, { stopReason: "done", changes: [change], applied: false, partial: true,
                                failureReason: "kept 1 of 2 changes in calc.py; rejected test_calc.py" });
  assert.equal(partial.editOutcome,
               "Edit partly applied: kept 1 of 2 changes in calc.py; rejected test_calc.py.");
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

test("the server's display-ready turns are drawn as they are: words, chips, notes, steps, edit, model", () => {
  const model = fromTurns("s7", [
    { index: 0, user: { text: "fix add in #file:calc.py", attachments: [{ kind: "file", name: "calc.py", lines: 7, size: 120 }],
                        refused: [], notes: [], trimmed: [] },
      model: "scripted-model", mode: "edit", outcome: "done", durationMs: 1500,
      steps: [{ kind: "text", text: "Reading." },
              { kind: "toolCall", id: "c1", name: "read_file", arguments: "{}", ok: true, summary: "ok (path: calc.py)" },
              { kind: "text", text: "Fixed." }],
      changes: { text: "edited calc.py (+1 −1)", applied: true } },
    { index: 1, user: { text: "thanks", notes: ["the person rejected your changes to calc.py"] },
      model: "scripted-model", mode: "ask", outcome: "cancelled", steps: [] },
  ]);
  assert.equal(model.sessionId, "s7");
  const [first, second] = model.turns;
  assert.equal(first.prompt, "fix add in #file:calc.py");
  assert.deepEqual(first.chips, [{ kind: "file", name: "calc.py", lines: 7, size: 120 }]);
  assert.deepEqual(first.parts, [
    { type: "text", text: "Reading." },
    { type: "tool", callId: "c1", name: "read_file", arguments: "{}", ok: true, summary: "ok (path: calc.py)" },
    { type: "text", text: "Fixed." },
  ]);
  assert.equal(first.editOutcome, "Edit applied: edited calc.py (+1 −1).");
  assert.equal(first.answeredBy, "scripted-model · edit · 1.5 s");
  assert.equal(first.state, "done");
  assert.equal(second.prompt, "thanks"); // the note is not the person's words
  assert.deepEqual(second.parts, [{ type: "note", level: "info", text: "the person rejected your changes to calc.py" }]);
  assert.equal(second.state, "cancelled");
});

const asked = (k: number): TurnRecord => ({
  index: k, user: { text: `Question ${k}` }, model: "scripted-model", outcome: "done",
  steps: [{ kind: "text", text: `Answer ${k}.` }],
});
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => asked(from + i));

test("a reopened session's page says how many turns came before; earlier pages go above it", () => {
  const model = fromTurns("s9", range(800, 1000), 800);
  assert.equal(model.earlier, 800);
  assert.equal(model.turns.length, 200);
  const sync = new ViewSync();
  const view = sync.full(model);
  assert.equal(view.earlier, 800);
  const latest = model.turns[model.turns.length - 1];
  const added = prependTurns(model, range(600, 800), 600);
  assert.equal(model.earlier, 600);
  assert.deepEqual(added.map((t) => t.prompt), ["Question 600", "Question 601"].concat(
    range(602, 800).map((r) => r.user!.text!)));
  assert.deepEqual(model.turns.slice(0, 2).map((t) => t.prompt), ["Question 600", "Question 601"]);
  assert.equal(model.turns[200].prompt, "Question 800");
  assert.equal(model.turns[model.turns.length - 1], latest); // the turns shown are left as they are
  const ids = new Set(model.turns.map((t) => t.id));
  assert.equal(ids.size, 400); // every turn its own id in the webview
  // Only the new turns are drawn; a follow-up after them still streams into its own turn.
  const op = sync.earlier(model, added);
  assert.ok(op.op === "earlier" && op.more === 600 && op.turns.length === 200);
  assert.equal(op.turns[0].prompt, "Question 600");
  assert.deepEqual(op.turns[0].parts, [{ type: "md", html: "<p>Answer 600.</p>\n", tail: null }]);
  assert.deepEqual(sync.changes(model, added[0]), []); // known to the view: nothing resent
  const next = startTurn(model, "and now?");
  assert.ok(next.id > Math.max(...model.turns.slice(0, -1).map((t) => t.id)));
  assert.deepEqual(sync.changes(model, next).map((o) => o.op), ["turn", "running"]);
  // The first page: nothing before it, the control goes.
  prependTurns(model, range(0, 600).slice(400), 400);
  prependTurns(model, range(0, 400), 0);
  assert.equal(model.earlier, 0);
  assert.equal(model.turns[0].prompt, "Question 0");
});

test("a short session has no earlier turns to show", () => {
  const model = fromTurns("s1", range(0, 3));
  assert.equal(model.earlier, 0);
  assert.equal(new ViewSync().full(model).earlier, 0);
  assert.equal(emptyModel().earlier, 0);
});

test("a stored turn without timing shows no duration; none reads as zero", () => {
  const model = fromTurns("s2", [
    { index: 0, user: { text: "no metadata at all" }, outcome: "done", steps: [{ kind: "text", text: "A." }] },
    { index: 1, user: { text: "stored in the same instant" }, durationMs: 0, steps: [] },
    { index: 2, user: { text: "no model, measured" }, durationMs: 2340, steps: [] },
    { index: 3, user: { text: "model, not measured" }, model: "scripted-model", mode: "ask", durationMs: null, steps: [] },
    { index: 4, user: { text: "quick" }, model: "scripted-model", durationMs: 40, steps: [] },
  ]);
  assert.deepEqual(model.turns.map((t) => t.answeredBy),
    [undefined, undefined, "2.3 s", "scripted-model · ask", "scripted-model · under 0.1 s"]);
  assert.equal(toView(model).turns[0].answeredBy, undefined); // no footer line is drawn
  for (const none of [undefined, null, 0, -5, Number.NaN, Number.POSITIVE_INFINITY]) assert.equal(took(none), "");
  assert.equal(took(99), "under 0.1 s");
  assert.equal(took(100), "0.1 s");
  assert.equal(took(61_250), "61.3 s");
});

test("'Earlier turns': a failed fetch keeps the turns, gives the reason, and a second click tries again", async () => {
  const model = fromTurns("s9", range(800, 1000), 800);
  const sync = new ViewSync();
  sync.full(model);
  const asks: number[] = [];
  let fail = true;
  const fetchPage = async (before: number): Promise<TurnsPage> => {
    asks.push(before);
    if (fail) throw new Error("Request agentls/turns failed: the AgentLS server is not running");
    return { turns: range(before - 200, before), start: before - 200 };
  };
  const pager = new EarlierTurns();
  const failed = await pager.click(model, sync, fetchPage, () => model);
  assert.deepEqual(failed, { op: "earlier", turns: [], more: 800,
    error: "Could not fetch the earlier turns (Request agentls/turns failed: the AgentLS server is not running); " +
      "click the button to try again." });
  assert.equal(model.turns.length, 200); // nothing added, nothing lost
  assert.equal(model.earlier, 800);
  fail = false;
  const op = await pager.click(model, sync, fetchPage, () => model); // the control, clicked again
  assert.deepEqual(asks, [800, 800]);
  assert.ok(op?.op === "earlier" && op.error === undefined && op.more === 600 && op.turns.length === 200);
  assert.equal(op.turns[0].prompt, "Question 600");
  assert.equal(model.turns[0].prompt, "Question 600");
});

test("'Earlier turns': one fetch at a time; an answer for a conversation no longer shown is dropped", async () => {
  const model = fromTurns("s9", range(800, 1000), 800);
  const sync = new ViewSync();
  sync.full(model);
  let release: (page: TurnsPage) => void = () => undefined;
  const pending = new Promise<TurnsPage>((resolve) => { release = resolve; });
  let asked = 0;
  const pager = new EarlierTurns();
  let shown = model;
  const first = pager.click(model, sync, () => { asked++; return pending; }, () => shown);
  assert.equal(await pager.click(model, sync, () => { asked++; return pending; }, () => shown), undefined);
  assert.equal(asked, 1); // a double click asks once
  shown = fromTurns("other", range(0, 3)); // History opened another session meanwhile
  release({ turns: range(600, 800), start: 600 });
  assert.equal(await first, undefined);
  assert.equal(model.turns.length, 200);
  const failing = await pager.click(model, sync, async () => { throw new Error("gone"); }, () => shown);
  assert.equal(failing, undefined); // its failure is not shown over the other conversation either
  assert.equal(await pager.click(emptyModel(), sync, async () => ({ turns: [], start: 0 }), () => shown), undefined);
});

test("a cancel the server refuses while the edit waits for review says so, not 'cancelling…'", () => {
  seq = 0;
  const model = emptyModel();
  const turn = startTurn(model, "rename lines");
  applyEvent(model, ev("toolCall", { callId: "c1", name: "edit_file", arguments: "{}" }));
  turn.status = "cancelling…"; // what Cancel shows while agentls/cancel is asked
  cancelRefused(turn, true);
  assert.equal(turn.state, "running");
  assert.equal(turn.status, "waiting for your review");
  assert.deepEqual(turn.parts.at(-1), { type: "note", level: "info", text: "Not stopped: its edit is " +
    "waiting for your review; the turn ends with it (keep or discard it in the review)" });
  // The review decided: the turn ends with the edit's outcome, as any turn does.
  applyResult(model, turn, { stopReason: "done", text: "Renamed.", applied: true });
  assert.equal(turn.state, "done");
  assert.notEqual(turn.status, "waiting for your review");

  const late = startTurn(model, "again");
  late.status = "cancelling…";
  cancelRefused(late, false);
  assert.equal(late.status, "finishing");
  assert.match((late.parts.at(-1) as { text: string }).text, /^Not stopped: its edit was already delivered/);
  // Refused after the turn ended: nothing added, its outcome stands.
  applyResult(model, late, { stopReason: "done", text: "ok" });
  const parts = late.parts.length;
  cancelRefused(late, true);
  assert.equal(late.parts.length, parts);
  assert.equal(late.state, "done");
});
