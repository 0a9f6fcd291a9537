// Settings -> the server's `workspace/configuration` section `agentls` (pure: no vscode import).
// The server validates every key itself (server/agentls/lsp/services/editor_settings.py); this module only
// renames the Settings UI's flat keys onto the engine's nested ones.

/** The environment variable the API key from SecretStorage is handed over in. */
export const API_KEY_ENV = "AGENTLS_API_KEY";

/** Backends that run an installed agent CLI instead of calling an HTTP API. */
export const CLI_BACKENDS = ["codex", "copilot", "claude"] as const;

export type Permission = "allow" | "ask" | "deny";

export interface UserAction {
  title: string;
  prompt: string;
  kind?: string;
}

/** The extension's settings as VS Code hands them over (`agentls.*`). */
export interface ExtensionSettings {
  backend: string;
  baseUrl: string;
  model: string;
  permissionsTools: Record<string, Permission>;
  cacheEnabled: boolean;
  actions: UserAction[];
  chatRequestsPerMinute: number;
  completionEnabled: boolean;
  completionModel: string;
  nextEditEnabled: boolean;
  nextEditModel: string;
}

export type Get = <T>(key: string, fallback: T) => T;

/** Reads the settings through a `WorkspaceConfiguration.get`-like function. */
export function readSettings(get: Get): ExtensionSettings {
  return {
    backend: get("backend", "openai"),
    baseUrl: get("baseUrl", ""),
    model: get("model", ""),
    permissionsTools: get("permissions.tools", {}),
    cacheEnabled: get("cache.enabled", true),
    actions: get("actions", []),
    chatRequestsPerMinute: get("chat.requestsPerMinute", 10),
    completionEnabled: get("completion.enabled", true),
    completionModel: get("completion.model", ""),
    nextEditEnabled: get("nextEdit.enabled", true),
    nextEditModel: get("nextEdit.model", ""),
  };
}

/** The `agentls` section the server pulls. `hasApiKey`: a key is in SecretStorage and will be
 * in the server's environment as API_KEY_ENV (never in this object). */
export function toServerConfig(s: ExtensionSettings, hasApiKey: boolean): Record<string, unknown> {
  const backend = s.backend.trim() || "openai";
  const entry: Record<string, unknown> = {};
  const isCli = (CLI_BACKENDS as readonly string[]).includes(backend);
  if (isCli) {
    entry.type = backend;
  } else {
    if (s.baseUrl.trim()) entry.base_url = s.baseUrl.trim();
    if (hasApiKey) entry.api_key_env = API_KEY_ENV;
  }
  if (s.model.trim()) entry.model = s.model.trim();
  const config: Record<string, unknown> = {
    backend,
    cache: { enabled: s.cacheEnabled },
    lsp: { chat_requests_per_minute: s.chatRequestsPerMinute },
  };
  if (Object.keys(entry).length > 0 || isCli) config.backends = { [backend]: entry };
  if (Object.keys(s.permissionsTools).length > 0) {
    config.permissions = { tools: { ...s.permissionsTools } };
  }
  if (s.actions.length > 0) config.actions = s.actions.map((a) => ({ ...a }));
  // Completions: on when a model is set (the server's default), off when toggled off.
  const completion: Record<string, unknown> = {};
  if (s.completionModel.trim()) completion.model = s.completionModel.trim();
  if (!s.completionEnabled) completion.enabled = false;
  if (Object.keys(completion).length > 0) config.completion = completion;
  // Next-edit suggestions: the same (the server is off until a next-edit model is set).
  const nextEdit: Record<string, unknown> = {};
  if (s.nextEditModel.trim()) nextEdit.model = s.nextEditModel.trim();
  if (!s.nextEditEnabled) nextEdit.enabled = false;
  if (Object.keys(nextEdit).length > 0) config.next_edit = nextEdit;
  return config;
}

/** The server process's environment: the editor's, plus the key when there is one. */
export function serverEnv(base: Record<string, string | undefined>,
                          apiKey: string | undefined): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(base)) if (v !== undefined) env[k] = v;
  delete env[API_KEY_ENV];
  if (apiKey) env[API_KEY_ENV] = apiKey;
  return env;
}

/** Settings whose change needs a new server process (the rest are pushed to the server). */
export const RESTART_KEYS = ["agentls.server.command", "agentls.server.python"];
