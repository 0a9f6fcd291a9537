// The marketplace page's settings table must match package.json's contributes.configuration.
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { test } from "node:test";

const root = path.resolve(__dirname, "../..");

test("README settings table lists exactly the settings in package.json, with their defaults", () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"));
  const props: Record<string, { default: unknown }> = pkg.contributes.configuration.properties;
  const readme = fs.readFileSync(path.join(root, "README.md"), "utf8");
  const rows = new Map<string, string>();
  for (const line of readme.split("\n")) {
    const match = line.match(/^\| `(agentls\.[\w.]+)` \| `([^`]*)` \|/);
    if (match) rows.set(match[1], match[2]);
  }
  assert.deepEqual([...rows.keys()].sort(), Object.keys(props).sort());
  for (const [key, spec] of Object.entries(props)) {
    assert.equal(rows.get(key), JSON.stringify(spec.default), `default of ${key}`);
  }
});

test("every contributed command has an AgentLS title and a handler in the source", () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"));
  const source = fs.readFileSync(path.join(root, "src/extension.ts"), "utf8");
  for (const c of pkg.contributes.commands) {
    assert.equal(c.category, "AgentLS");
    assert.ok(source.includes(`register("${c.command}"`), `no handler for ${c.command}`);
  }
});
