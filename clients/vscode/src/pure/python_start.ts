// The server's fallback start when `agentls` is not on PATH (pure: node:test covers it, and
// tests/integration/test_hostile_workspace.py starts exactly these arguments in a workspace).
// `-P` (Python >= 3.11, which AgentLS requires): nothing is put first on sys.path, so the
// working folder, the workspace, is not searched, and a file there named like a standard
// module (types.py, json.py) or like AgentLS itself is never imported (docs/SECURITY.md).

/** `<python> -P -m agentls serve`. */
export const PYTHON_SERVE_ARGS = ["-P", "-m", "agentls", "serve"];
