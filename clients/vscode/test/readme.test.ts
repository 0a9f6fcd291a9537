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
  const source = ["src/extension.ts", "src/editorReview.ts"]
    .map((f) => fs.readFileSync(path.join(root, f), "utf8")).join("\n");
  for (const c of pkg.contributes.commands) {
    assert.match(c.category, /^AgentLS( Review)?$/);
    assert.ok(source.includes(`register("${c.command}"`) || source.includes(`command("${c.command}"`),
              `no handler for ${c.command}`);
  }
});

test("the review's keys act only while a review is open, and the README names them", () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"));
  const readme = fs.readFileSync(path.join(root, "README.md"), "utf8");
  const review = pkg.contributes.keybindings.filter((b: { command: string }) => b.command.startsWith("agentls.review."));
  assert.ok(review.length >= 6);
  for (const binding of review) {
    assert.match(binding.when, /^agentls\.review(ing|\.inFile) && editorTextFocus$/, binding.command);
    const shown = binding.key.split("+").map((k: string) => k[0].toUpperCase() + k.slice(1)).join("+")
      .replace(/^F5$/, "F5");
    assert.ok(readme.includes(`\`${shown}\``), `README does not name ${shown}`);
  }
});

test("AgentLS's keybindings are Ctrl+K / Cmd+K chords (VS Code binds none of these) and the README names them", () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"));
  const readme = fs.readFileSync(path.join(root, "README.md"), "utf8");
  // VS Code's own Ctrl+K chords use these second keys (its default keybindings, 1.9x).
  const taken = new Set(["c", "d", "e", "f", "i", "m", "o", "p", "r", "s", "t", "u", "v", "w",
                         "y", "z", "enter", "shift+enter", "shift+o", "f2", "f12", "up", "down",
                         "left", "right"]);
  type Binding = { command: string; key: string; mac?: string; when?: string };
  const all: Binding[] = pkg.contributes.keybindings.filter((b: Binding) => b.command.startsWith("agentls.ui."));
  // Tab and Escape are bound only while a next edit is on screen (the context key), and
  // never while an inline suggestion or the suggest widget is, whose keys they are.
  const whileShown = all.filter((b) => b.when?.startsWith("agentls.nextEditShown"));
  for (const binding of whileShown) {
    assert.ok(["tab", "escape"].includes(binding.key), binding.key);
    assert.match(binding.when!, /!inlineSuggestionVisible && !suggestWidgetVisible/);
  }
  assert.ok(readme.includes("**Tab** accepts it") && readme.includes("**Escape** dismisses it"));
  const own = all.filter((b) => !whileShown.includes(b));
  assert.ok(own.length >= 3);
  for (const binding of own) {
    const [prefix, second] = binding.key.split(" ");
    assert.equal(prefix, "ctrl+k", binding.key);
    assert.equal(binding.mac, `cmd+k ${second}`);
    assert.ok(!second.startsWith("ctrl+") && !taken.has(second), `${binding.key} is VS Code's`);
    const shown = `\`Ctrl+K ${second.split("+").map((k: string) => k[0].toUpperCase() + k.slice(1)).join("+")}\``;
    assert.ok(readme.includes(shown), `README does not name ${shown}`);
  }
});

test("the .vsix carries the LICENSE, the icon and the CHANGELOG; the README names the file the build makes", () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"));
  const ignore = fs.readFileSync(path.join(root, ".vscodeignore"), "utf8").split("\n");
  for (const kept of ["!LICENSE", "!CHANGELOG.md", "!images/**"]) assert.ok(ignore.includes(kept), kept);
  assert.ok(fs.existsSync(path.join(root, pkg.icon)), pkg.icon);
  assert.ok(fs.existsSync(path.join(root, "CHANGELOG.md")));
  assert.match(pkg.scripts.package, /copyFileSync\('\.\.\/\.\.\/LICENSE', 'LICENSE'\)/);
  assert.doesNotMatch(pkg.scripts.package, /--skip-license/);
  const out = /-o (\S+\.vsix)/.exec(pkg.scripts.package)![1];
  const readme = fs.readFileSync(path.join(root, "README.md"), "utf8");
  assert.ok(readme.includes(out), `README does not name ${out}`);
});
