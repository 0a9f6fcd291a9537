import assert from "node:assert/strict";
import { test } from "node:test";
import { type BackendOption, modelRows } from "../src/pure/models";

const backend = (fields: Partial<BackendOption>): BackendOption => ({
  name: "local", model: "qwen", models: ["qwen"], status: "unchecked", detail: "not asked for its models",
  active: false, ...fields,
});

test("the picker's first rows: the configured models, no status line before the servers are asked", () => {
  const rows = modelRows([backend({ active: true }), backend({ name: "remote", model: "gpt", models: ["gpt"] }),
                          backend({ name: "codex", model: "", models: [], status: "cli" })], "qwen", false);
  assert.deepEqual(rows.map((r) => [r.label, r.description, r.detail]),
                   [["qwen", "local · current", undefined], ["gpt", "remote", undefined]]);
});

test("once probed: every served model, and why a backend could not be asked", () => {
  const rows = modelRows([
    backend({ status: "available", models: ["qwen", "llama"] }),
    backend({ name: "remote", model: "gpt", models: ["gpt"], status: "unreachable", detail: "timed out after 1 s" }),
  ], "llama", true);
  assert.deepEqual(rows.map((r) => [r.label, r.description, r.detail, r.backend, r.model]), [
    ["qwen", "local", undefined, "local", "qwen"],
    ["llama", "local · current", undefined, "local", "llama"],
    ["gpt", "remote", "unreachable: timed out after 1 s", "remote", "gpt"],
  ]);
});
