import assert from "node:assert/strict";
import { test } from "node:test";
import { mcpArgs, mcpReport } from "../src/pure/mcp";
import { PYTHON_SERVE_ARGS } from "../src/pure/python_start";

test("the server's command becomes `agentls mcp`, however it is started", () => {
  assert.deepEqual(mcpArgs(["serve"]), ["mcp"]);
  assert.deepEqual(mcpArgs(["-m", "agentls", "serve"]), ["-m", "agentls", "mcp"]);
  assert.deepEqual(mcpArgs(PYTHON_SERVE_ARGS), ["-P", "-m", "agentls", "mcp"]);
  assert.deepEqual(mcpArgs([]), ["mcp"]);
});

test("the report is the listing, the reason there is none, or the failure", () => {
  assert.equal(mcpReport(0, "time  stdio  running  2 tools\n", ""), "time  stdio  running  2 tools");
  assert.equal(mcpReport(0, "", "no MCP server is configured; add one with ..."),
               "no MCP server is configured; add one with ...");
  assert.equal(mcpReport(1, "gone  stdio  failed\n", ""), "gone  stdio  failed");
  assert.equal(mcpReport(78, "", "bad config"), "agentls mcp failed (exit 78): bad config");
});
