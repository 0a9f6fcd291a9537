-- :checkhealth agentls
local M = {}

local function run(argv, timeout, env, cwd)
  local ok, proc = pcall(vim.system, argv, { text = true, env = env, cwd = cwd })
  if not ok then
    return nil
  end
  return proc:wait(timeout)
end

--- setup({settings}) as AGENTLS_* variables (`.` written `__`), so `agentls backends` looks
--- at the backends the server is started with: the active one and the configured ones.
function M.settings_env(settings)
  local env = {}
  local function put(name, value)
    if value == vim.NIL then
      env[name] = "none"
    elseif type(value) == "table" and vim.islist(value) then
      env[name] = vim.json.encode(value)
    elseif type(value) == "table" then
      for k, v in pairs(value) do
        put(name .. "__" .. tostring(k):upper(), v)
      end
    else
      env[name] = tostring(value)
    end
  end
  settings = settings or {}
  if type(settings.backend) == "string" then
    env.AGENTLS_BACKEND = settings.backend
  end
  if type(settings.backends) == "table" then
    put("AGENTLS_BACKENDS", settings.backends)
  end
  return env
end

--- The variable holding the key the backend needs, when it is not set; nil otherwise.
local function missing_key(opts, name)
  local backend = (opts.settings.backends or {})[name] or {}
  local var = backend.api_key_env
  if var == nil and name == "openai" then
    var = "OPENAI_API_KEY"
  end
  if type(var) ~= "string" or var == "" or var:lower() == "none" then
    return nil
  end
  if opts.api_key_cmd or opts.api_key_file or (vim.env[var] and vim.env[var] ~= "") then
    return nil
  end
  return var
end

--- The backend the plugin configured, checked by `agentls backends --json` with its settings:
--- its row, and when it fails, what to do.
function M.check_backend(health, opts)
  local clients = vim.lsp.get_clients({ name = "agentls" })
  local cwd = clients[1] and clients[1].root_dir or vim.fn.getcwd()
  local argv = require("agentls.config").server_cmd(opts)
  argv[#argv] = "backends" -- the server command, `serve` replaced
  table.insert(argv, "--json")
  local result = run(argv, 30000, M.settings_env(opts.settings), cwd)
  local out = result and vim.trim(result.stdout or "") or ""
  local ok, report = pcall(vim.json.decode, out)
  if not result or not ok or type(report) ~= "table" or type(report.backends) ~= "table" then
    local said = result and vim.trim((result.stderr or "") .. " " .. out) or "did not run"
    health.error(
      string.format("`agentls backends` exit %s: %s", result and result.code or "?", said:sub(1, 500)),
      { "Check the settings passed to setup() (:help agentls-options) and `agentls config list`" }
    )
    return
  end
  local active
  for _, row in ipairs(report.backends) do
    if row.active then
      active = row
    end
  end
  if not active then
    health.error(
      "the configured backend " .. tostring(report.active) .. " is not in `agentls backends`",
      { "Set settings.backend in setup() to one of the configured backends" }
    )
    return
  end
  local function text(v)
    return (v ~= nil and v ~= vim.NIL) and tostring(v) or nil
  end
  local row = string.format(
    "backend %s (%s%s%s): %s, %s",
    active.name,
    active.type,
    text(active.model) and (", model " .. active.model) or "",
    text(active.url) and (", " .. active.url) or "",
    active.status,
    text(active.detail) or ""
  )
  if active.status == "available" then
    health.ok(row)
  else
    health.error(row, { text(active.next) or "see `agentls backends`" })
  end
  local var = missing_key(opts, active.name)
  if var or active.status == "unauthenticated" then
    health.warn(
      "$" .. (var or "the backend's key variable") .. " is not set; backend " .. active.name .. " needs a key",
      { "Export it before starting Neovim, or set api_key_cmd / api_key_file in setup()" }
    )
  end
  local others = {}
  for _, r in ipairs(report.backends) do
    if not r.active then
      table.insert(others, r.name .. " " .. r.status)
    end
  end
  if #others > 0 then
    health.info("other backends: " .. table.concat(others, ", "))
  end
end

function M.check()
  local health = vim.health
  local config = require("agentls.config")
  local opts = config.options
  health.start("AgentLS")

  local v = vim.version()
  local version = string.format("%d.%d.%d", v.major, v.minor, v.patch)
  if vim.fn.has("nvim-0.10") == 1 then
    health.ok("Neovim " .. version .. (vim.lsp.enable and " (vim.lsp.config / vim.lsp.enable)" or " (vim.lsp.start)"))
  else
    health.error("Neovim " .. version .. " is too old", { "AgentLS needs Neovim 0.10 or newer" })
  end

  if not require("agentls").configured then
    health.warn("setup() has not been called", { 'Add require("agentls").setup({}) to your config' })
  end

  local exe = opts.cmd[1]
  if vim.fn.executable(exe) == 1 then
    local result = run({ exe, "--version" }, 20000)
    local out = result and vim.trim((result.stdout or "") .. (result.stderr or "")) or ""
    if result and result.code == 0 then
      health.ok(string.format("server command %s found: %s", vim.fn.exepath(exe), out))
    else
      health.error(string.format("%s --version failed: %s", exe, out), { "Reinstall AgentLS: pipx install agentls" })
    end
  else
    health.error(
      "server command not found: " .. exe,
      { "Install AgentLS (pipx install agentls) or set cmd in setup()" }
    )
    return
  end

  M.check_backend(health, opts)

  -- MCP servers: `agentls mcp --json` starts each enabled one as a run would (its tools and
  -- state), in the current folder (the project's settings count too).
  local mcp_cmd = vim.deepcopy(opts.cmd)
  if mcp_cmd[#mcp_cmd] == "serve" then -- { "agentls", "serve" } or { "python", "-m", "agentls", "serve" }
    table.remove(mcp_cmd)
  end
  vim.list_extend(mcp_cmd, { "mcp", "--json" })
  local mcp = run(config.server_cmd(vim.tbl_extend("force", opts, { cmd = mcp_cmd })), 90000)
  local decoded, listing = pcall(vim.json.decode, mcp and mcp.stdout or "")
  if decoded and type(listing) == "table" and type(listing.servers) == "table" then
    for _, s in ipairs(listing.servers) do
      local line = string.format("MCP server %s (%s, %s): %s", s.name, s.transport, s.how, s.state)
      if s.state == "running" then
        health.ok(string.format("%s, %d tools", line, s.tools))
      elseif s.state == "disabled" then
        health.info(line)
      else
        health.error(
          line .. (s.error and (": " .. tostring(s.error):sub(1, 400)) or ""),
          { "Fix mcp.servers." .. s.name .. " (docs/MCP.md), then :checkhealth agentls" }
        )
      end
    end
  elseif mcp and mcp.code == 0 then
    health.info("no MCP server configured (mcp.servers.NAME in the AgentLS config)")
  else
    local out = mcp and vim.trim((mcp.stdout or "") .. (mcp.stderr or "")) or "did not run"
    health.warn("`agentls mcp --json` failed: " .. out:sub(1, 400))
  end

  if opts.api_key_cmd then
    health.ok("key read by the server's shell from api_key_cmd (not shown)")
  elseif opts.api_key_file then
    if vim.fn.filereadable(vim.fn.expand(opts.api_key_file)) == 1 then
      health.ok("key file " .. opts.api_key_file .. " readable (not shown)")
    else
      health.error("key file " .. opts.api_key_file .. " not readable", { "Create it, chmod 600" })
    end
  end

  local clients = vim.lsp.get_clients({ name = "agentls" })
  if #clients > 0 then
    local c = clients[1]
    local info = c.server_info or {}
    health.ok(
      string.format(
        "server running (client %d, %s %s, root %s)",
        c.id,
        info.name or "agentls",
        info.version or "",
        c.root_dir or "?"
      )
    )
  else
    health.info("no AgentLS server running in this Neovim: open a file of a project")
  end
end

return M
