-- AgentLS for Neovim: starts the server with the built-in client and adds what Neovim
-- lacks: an edit preview, a chat buffer, progress. `:help agentls`.
local config = require("agentls.config")

local M = {}

M.NAME = "agentls"

local state = { message = nil, running = {} } -- for statuslines

--- The AgentLS client for a buffer (or the first one running).
function M.client(bufnr)
  local clients = vim.lsp.get_clients({ name = M.NAME, bufnr = bufnr })
  if #clients == 0 and bufnr then
    clients = vim.lsp.get_clients({ name = M.NAME })
  end
  return clients[1]
end

--- client:request on 0.11, client.request on 0.10: (ok, request_id).
function M.call(client, method, params, handler, bufnr)
  if vim.fn.has("nvim-0.11") == 1 then
    return client:request(method, params, handler, bufnr)
  end
  return client.request(method, params, handler, bufnr)
end

--- client:cancel_request on 0.11, client.cancel_request on 0.10.
function M.cancel_request(client, id)
  if vim.fn.has("nvim-0.11") == 1 then
    return client:cancel_request(id)
  end
  return client.cancel_request(id)
end

--- One line for a statusline: "" when idle, else what the agent is doing.
function M.status()
  if next(state.running) == nil then
    return ""
  end
  return "AgentLS: " .. (state.message or "working")
end

function M.notify(message, level)
  if config.options.notify then
    vim.notify(message, level or vim.log.levels.INFO, { title = "AgentLS" })
  end
end

local function capabilities()
  local caps = vim.lsp.protocol.make_client_capabilities()
  -- Without lazy resolve the server offers actions as the agentls.runAction command and
  -- sends their edit through workspace/applyEdit: the preview shows it and the server
  -- hears whether it was applied.
  caps.textDocument.codeAction.resolveSupport = { properties = { "command" } }
  caps.workspace.workspaceEdit.changeAnnotationSupport = { groupsOnLabel = false }
  caps.workspace.workspaceEdit.documentChanges = true
  return caps
end

local function progress(_, result, ctx)
  local value = result and result.value or {}
  local key = tostring(result and result.token)
  if value.kind == "begin" then
    state.running[key] = true
    state.message = value.title
    M.notify(value.title .. (value.message and (": " .. value.message) or ""))
  elseif value.kind == "report" then
    state.message = value.message or state.message
  elseif value.kind == "end" then
    state.running[key] = nil
    state.message = nil
    M.notify((value.message or "done"))
  end
  vim.lsp.handlers["$/progress"](_, result, ctx)
  vim.cmd.redrawstatus({ bang = true, mods = { emsg_silent = true } })
end

local stops = {} -- when the server stopped unasked (restarts.lua)
local stopping = {} -- ids of clients stopped on purpose (:AgentRestart)

local function root_for(bufnr)
  if vim.bo[bufnr].buftype ~= "" or vim.api.nvim_buf_get_name(bufnr) == "" then
    return nil
  end
  return vim.fs.root(bufnr, config.options.root_markers) or vim.fn.getcwd()
end

--- Attach every loaded file buffer (a new server after a stop).
local function attach_all()
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_loaded(bufnr) and root_for(bufnr) then
      M.attach(bufnr)
    end
  end
end

--- The server ended. Asked (exit code 0, :AgentRestart, Neovim quitting): nothing to do.
--- Else Neovim has said so (its "quit with exit code" warning): start a new one a little
--- later, and after a few stops close together leave it stopped and say what to do.
local function on_exit(code, signal, client_id)
  if stopping[client_id] then
    stopping[client_id] = nil
    return
  end
  if (code == 0 and signal == 0) or vim.v.exiting ~= vim.NIL then
    return
  end
  local why = signal ~= 0 and ("signal " .. signal) or ("exit code " .. code)
  local decision = require("agentls.restarts").on_stop(stops, vim.uv.now())
  vim.schedule(function()
    if not decision.restart then
      M.notify(
        string.format(
          "AgentLS: the server stopped %d times in 3 minutes (last: %s) and is left stopped. "
            .. "See :checkhealth agentls and the log (%s), then :AgentRestart",
          decision.stops,
          why,
          vim.lsp.get_log_path()
        ),
        vim.log.levels.ERROR
      )
      return
    end
    M.notify(
      string.format(
        "AgentLS: the server stopped (%s); starting it again in %.1f s (%d of %d)",
        why,
        decision.delay_ms / 1000,
        decision.attempt,
        require("agentls.restarts").MAX_RESTARTS
      ),
      vim.log.levels.WARN
    )
    vim.defer_fn(attach_all, decision.delay_ms)
  end)
end

--- :AgentRestart: stop the servers, then start one for the open files (the count of stops
--- starts again).
function M.restart()
  stops = {}
  local clients = vim.lsp.get_clients({ name = M.NAME })
  for _, client in ipairs(clients) do
    stopping[client.id] = true
    if vim.fn.has("nvim-0.11") == 1 then
      client:stop()
    else
      client.stop()
    end
  end
  local waited = 0
  local function start_when_stopped()
    -- Gone, not only stopping: until Neovim has removed a client it is still attached to
    -- the buffers, and a request sent then would go to it too and never be answered.
    local running = vim.tbl_filter(function(c)
      return vim.lsp.get_client_by_id(c.id) ~= nil
    end, clients)
    if #running > 0 and waited < 5000 then
      if waited == 2000 then -- not answering shutdown: end it
        for _, client in ipairs(running) do
          if vim.fn.has("nvim-0.11") == 1 then
            client:stop(true)
          else
            client.stop(true)
          end
        end
      end
      waited = waited + 50
      vim.defer_fn(start_when_stopped, 50)
      return
    end
    attach_all()
    M.notify("AgentLS: starting the server again")
  end
  start_when_stopped()
end

--- The client configuration (also what `vim.lsp.config("agentls", ...)` gets on 0.11).
function M.client_config()
  local opts = config.options
  return {
    name = M.NAME,
    cmd = config.server_cmd(opts),
    root_markers = opts.root_markers,
    init_options = opts.settings,
    before_init = function(params, cfg) -- workspaceTrusted, from vim.secure (trust.lua)
      params.initializationOptions = require("agentls.trust").init_options(cfg.root_dir, params.initializationOptions)
    end,
    settings = { agentls = opts.settings },
    capabilities = capabilities(),
    on_exit = on_exit,
    handlers = {
      ["workspace/applyEdit"] = function(err, params, ctx)
        return require("agentls.preview").handle(err, params, ctx)
      end,
      ["agentls/chatEvent"] = function(_, params, ctx)
        require("agentls.chat").on_event(params, ctx)
      end,
      ["$/progress"] = progress,
      ["agentls/completionStatus"] = function(_, params)
        require("agentls.completion").on_status(params)
      end,
      ["agentls/nextEditStatus"] = function(_, params)
        require("agentls.next_edit").on_status(params)
      end,
    },
  }
end

--- Start (or reuse) the server for a buffer; returns the client id.
function M.attach(bufnr)
  bufnr = bufnr or vim.api.nvim_get_current_buf()
  local root = root_for(bufnr)
  if not root then
    return nil
  end
  local cfg = M.client_config()
  cfg.root_dir = root
  cfg.workspace_folders = { { uri = vim.uri_from_fname(root), name = vim.fs.basename(root) } }
  return vim.lsp.start(cfg, { bufnr = bufnr })
end

local group = vim.api.nvim_create_augroup("agentls", { clear = true })

--- Merge options and start attaching to file buffers; does nothing expensive.
function M.setup(opts)
  config.set(opts)
  M.configured = true
  vim.api.nvim_clear_autocmds({ group = group })
  if vim.lsp.config and vim.lsp.enable then -- Neovim 0.11+
    local cfg = M.client_config()
    cfg.root_dir = function(bufnr, on_dir)
      local root = root_for(bufnr)
      if root then
        on_dir(root)
      end
    end
    vim.lsp.config(M.NAME, cfg)
    vim.lsp.enable(M.NAME)
  else
    vim.api.nvim_create_autocmd("FileType", {
      group = group,
      callback = function(args)
        M.attach(args.buf)
      end,
    })
  end
  require("agentls.highlights").setup()
  require("agentls.completion").setup()
  require("agentls.next_edit").setup()
  require("agentls.keys").setup(config.options.keymaps)
  return config.options
end

--- A request to the AgentLS client; `on_result(err, result)` runs on the main loop.
function M.request(method, params, on_result, bufnr)
  local client = M.client(bufnr or vim.api.nvim_get_current_buf())
  if not client then
    M.notify("AgentLS is not running: open a file in a project (:checkhealth agentls)", vim.log.levels.ERROR)
    return nil
  end
  local ok, id = M.call(client, method, params, function(err, result)
    on_result(err, result, client)
  end)
  if not ok then
    M.notify("AgentLS: the server stopped; :AgentRestart, or :checkhealth agentls", vim.log.levels.ERROR)
  end
  return id, client
end

function M.commit_message()
  local bufnr = vim.api.nvim_get_current_buf()
  if vim.bo[bufnr].filetype ~= "gitcommit" then
    M.notify(
      "AgentLS: :AgentCommitMessage works in a commit message buffer (git commit, fugitive's cc)",
      vim.log.levels.WARN
    )
    return
  end
  local attach_to = bufnr
  if not M.client(bufnr) then
    M.notify("AgentLS is not running: open a file of the project first", vim.log.levels.ERROR)
    return
  end
  M.notify("AgentLS: writing a commit message…")
  M.request("workspace/executeCommand", { command = "agentls.commitMessage", arguments = {} }, function(err, result)
    if err then
      M.notify("AgentLS: no commit message: " .. (err.message or vim.inspect(err)), vim.log.levels.ERROR)
      return
    end
    if not vim.api.nvim_buf_is_valid(attach_to) then
      return
    end
    local lines = vim.split(type(result) == "string" and result or "", "\n", { plain = true })
    -- Above git's own comment lines, which stay as they are.
    local first_comment = #vim.api.nvim_buf_get_lines(attach_to, 0, -1, false)
    for i, line in ipairs(vim.api.nvim_buf_get_lines(attach_to, 0, -1, false)) do
      if line:match("^#") then
        first_comment = i - 1
        break
      end
    end
    vim.api.nvim_buf_set_lines(attach_to, 0, first_comment, false, vim.list_extend(lines, { "" }))
  end, bufnr)
end

return M
