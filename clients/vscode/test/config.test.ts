import assert from "node:assert/strict";
import { test } from "node:test";
import {
  API_KEY_ENV, type ExtensionSettings, readSettings, serverEnv, toServerConfig,
} from "../src/pure/config";

const defaults: ExtensionSettings = readSettings((_key, fallback) => fallback);

test("defaults map to the built-in openai backend and the server's own defaults", () => {
  assert.deepEqual(toServerConfig(defaults, false), {
    backend: "openai", cache: { enabled: true }, lsp: { chat_requests_per_minute: 10 },
  });
});

test("base URL and model override the chosen backend; a stored key names its variable", () => {
  const config = toServerConfig({ ...defaults, backend: "ollama", baseUrl: " http://gpu:11434/v1 ",
                                  model: "qwen2.5-coder:14b" }, true);
  assert.deepEqual(config.backends, {
    ollama: { base_url: "http://gpu:11434/v1", model: "qwen2.5-coder:14b", api_key_env: API_KEY_ENV },
  });
});

test("agent CLI backends get their type and no key variable or URL", () => {
  const config = toServerConfig({ ...defaults, backend: "codex", baseUrl: "http://x/v1" }, true);
  assert.deepEqual(config.backends, { codex: { type: "codex" } });
});

test("permissions, cache, actions and rate limit land on the server's keys", () => {
  const config = toServerConfig({
    ...defaults, permissionsTools: { shell_exec: "deny" }, cacheEnabled: false,
    actions: [{ title: "Translate", prompt: "Translate {selection}" }], chatRequestsPerMinute: 3,
  }, false);
  assert.deepEqual(config.permissions, { tools: { shell_exec: "deny" } });
  assert.deepEqual(config.cache, { enabled: false });
  assert.deepEqual(config.actions, [{ title: "Translate", prompt: "Translate {selection}" }]);
  assert.deepEqual(config.lsp, { chat_requests_per_minute: 3 });
});

test("readSettings asks for every key package.json declares", () => {
  const asked: string[] = [];
  readSettings((key, fallback) => { asked.push(key); return fallback; });
  assert.deepEqual(asked.sort(), ["actions", "backend", "baseUrl", "cache.enabled",
                                  "chat.requestsPerMinute", "completion.enabled", "completion.model",
                                  "model", "nextEdit.enabled", "nextEdit.model",
                                  "permissions.tools"]);
});

test("completions: the model when set, enabled only when toggled off (else the server's default)", () => {
  assert.equal(toServerConfig(defaults, false).completion, undefined);
  assert.deepEqual(toServerConfig({ ...defaults, completionModel: " qwen2.5-coder:1.5b " }, false)
    .completion, { model: "qwen2.5-coder:1.5b" });
  assert.deepEqual(toServerConfig({ ...defaults, completionModel: "m", completionEnabled: false },
                                  false).completion, { model: "m", enabled: false });
});

test("the key goes only into the environment, and a stale one is removed", () => {
  const env = serverEnv({ PATH: "/bin", [API_KEY_ENV]: "old", UNSET: undefined }, "sk-new");
  assert.equal(env[API_KEY_ENV], "sk-new");
  assert.equal(env.PATH, "/bin");
  assert.ok(!("UNSET" in env));
  assert.ok(!(API_KEY_ENV in serverEnv({ [API_KEY_ENV]: "old" }, undefined)));
  const config = JSON.stringify(toServerConfig(defaults, true));
  assert.ok(!config.includes("sk-new"));
});
