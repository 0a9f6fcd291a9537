-- :checkhealth agentls
local M = {}

local function run(argv, timeout)
  local ok, proc = pcall(vim.system, argv, { text = true })
  if not ok then
    return nil
  end
  return proc:wait(timeout)
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

  local backends = run(config.server_cmd(vim.tbl_extend("force", opts, { cmd = { exe, "backends" } })), 30000)
  if backends and backends.code == 0 then
    health.ok("backend reachable (`agentls backends` exit 0)")
  else
    local out = backends and vim.trim((backends.stdout or "") .. (backends.stderr or "")) or "did not run"
    local code = backends and backends.code or -1
    health.error(
      string.format("`agentls backends` exit %d: %s", code, out:sub(1, 500)),
      { "Check base_url, model and the key of the active backend" }
    )
  end

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
          { "Fix mcp.servers." .. s.name .. " (README: Tools from MCP servers), then :checkhealth agentls" }
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
  elseif vim.env[opts.api_key_env] and vim.env[opts.api_key_env] ~= "" then
    health.ok("$" .. opts.api_key_env .. " is set (not shown); the server inherits it")
  else
    health.warn(
      "$" .. opts.api_key_env .. " is not set",
      { "Export it before starting Neovim, or set api_key_cmd / api_key_file; local backends need none" }
    )
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
