import assert from "node:assert/strict";
import { test } from "node:test";
import { explainInPanel } from "../src/pure/explain";

test("the server's Explain action runs Explain in Chat with the same target; others are untouched", () => {
  const target = { uri: "file:///w/calc.py", range: { start: { line: 1, character: 0 }, end: { line: 3, character: 0 } },
                   version: 4, action: "explain" };
  type Command = { title: string; command: string; arguments?: unknown[] };
  const actions: { title: string; command: Command }[] = [
    { title: "AgentLS: Explain", command: { title: "AgentLS: Explain", command: "agentls.runAction", arguments: [target] } },
    { title: "AgentLS: Add documentation", command: { title: "x", command: "agentls.runAction",
                                                      arguments: [{ ...target, action: "document" }] } },
    { title: "Organize imports", command: { title: "y", command: "python.sortImports" } },
  ];
  explainInPanel(actions);
  assert.equal(actions[0].command.command, "agentls.ui.explain");
  assert.deepEqual(actions[0].command.arguments, [target]);
  assert.equal(actions[1].command.command, "agentls.runAction");
  assert.equal(actions[2].command.command, "python.sortImports");
  const bare: Command[] = [{ title: "AgentLS: Explain", command: "agentls.runAction", arguments: [target] }];
  explainInPanel(bare);
  assert.equal(bare[0].command, "agentls.ui.explain");
  assert.equal(explainInPanel(undefined), undefined);
});
