-- Completions as you type (`:help agentls-completion`): ghost text from the server's
-- textDocument/inlineCompletion. Neovim 0.12+ has vim.lsp.inline_completion, which is used
-- there (not tested here: the tests run 0.11); before it, this module draws the ghost text
-- itself with extmarks and maps the accept / accept word / accept line / dismiss keys.
local config = require("agentls.config")
local suggestions = require("agentls.suggestions")

local M = {}

local ns = vim.api.nvim_create_namespace("agentls_completion")
local METHOD = "textDocument/inlineCompletion"
local state = {
  enabled = true, -- :AgentCompletionToggle (this Neovim only; the server has completion.enabled)
  status = nil, -- the server's agentls/completionStatus (nil until it says)
  message = "",
  shown = nil, -- { bufnr, row, col, text, extmark }
  pending = nil, -- { client, id }
  tick = 0, -- requests answered after a newer one was sent are dropped
}

local function native()
  return vim.lsp.inline_completion ~= nil and vim.lsp.inline_completion.enable ~= nil
end

--- The server's status for statuslines: "idle", "waiting", "off", "error" (or "disabled"
--- after :AgentCompletionToggle).
function M.status()
  if not state.enabled then
    return "disabled"
  end
  return state.status or "off"
end

--- The ghost text shown now (nil when none): for tests and statuslines.
function M.shown()
  return state.shown and state.shown.text or nil
end

function M.on_status(params)
  suggestions.on_status(state, params, "completion")
end

function M.clear()
  suggestions.clear(state, ns)
end

local function cancel_pending()
  suggestions.cancel_pending(state)
end

local function cursor()
  local pos = vim.api.nvim_win_get_cursor(0)
  return pos[1] - 1, pos[2]
end

local function draw(bufnr, row, col, text)
  M.clear()
  if text == "" then
    return
  end
  local lines = vim.split(text, "\n", { plain = true })
  local virt_lines = {}
  for i = 2, #lines do
    table.insert(virt_lines, { { lines[i], "AgentlsGhostText" } })
  end
  local opts = { virt_text = { { lines[1], "AgentlsGhostText" } }, virt_text_pos = "inline", hl_mode = "combine" }
  if #virt_lines > 0 then
    opts.virt_lines = virt_lines
  end
  local ok, id = pcall(vim.api.nvim_buf_set_extmark, bufnr, ns, row, col, opts)
  if ok then
    state.shown = { bufnr = bufnr, row = row, col = col, text = text, extmark = id }
  end
end

--- The item's text as it continues what is before the cursor (the server may replace a
--- range that starts before the cursor: the part already typed is left out).
local function continuation(item, bufnr, row, col, encoding)
  local text = type(item.insertText) == "table" and item.insertText.value or item.insertText or ""
  local range = item.range
  if range and range.start.line == row then
    local line = vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ""
    local ok, start = pcall(vim.str_byteindex, line, encoding, range.start.character, false)
    if ok and start < col then
      local typed = line:sub(start + 1, col)
      if vim.startswith(text, typed) then
        text = text:sub(#typed + 1)
      end
    end
  end
  return text:gsub("\r\n", "\n")
end

--- Ask the server for a completion at the cursor (`automatic`: as you type).
function M.request(automatic)
  local bufnr = vim.api.nvim_get_current_buf()
  local agentls = require("agentls")
  local client = agentls.client(bufnr)
  if not state.enabled or not client or vim.fn.mode() ~= "i" or state.status == "off" then
    return -- "off": the server has no completion model, so it would answer nothing
  end
  cancel_pending()
  state.tick = state.tick + 1
  local tick = state.tick
  local row, col = cursor()
  local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
  params.context = { triggerKind = automatic and 2 or 1 }
  local ok, id = agentls.call(client, METHOD, params, function(err, result)
    if tick ~= state.tick or err or not result then
      return
    end
    local items = result.items or result
    local r, c = cursor()
    if vim.api.nvim_get_current_buf() ~= bufnr or r ~= row or c ~= col or vim.fn.mode() ~= "i" then
      return -- the cursor moved on: a newer request is coming
    end
    if items and items[1] then
      draw(bufnr, row, col, continuation(items[1], bufnr, row, col, client.offset_encoding))
    else
      M.clear()
    end
  end, bufnr)
  if ok then
    state.pending = { client = client, id = id }
  end
end

local function insert(text)
  local shown = state.shown
  M.clear()
  state.accepted = true -- the TextChangedI this causes is ours: the rest stays shown
  local lines = vim.split(text, "\n", { plain = true })
  vim.api.nvim_buf_set_text(shown.bufnr, shown.row, shown.col, shown.row, shown.col, lines)
  local row = shown.row + #lines - 1
  local col = (#lines == 1 and shown.col or 0) + #lines[#lines]
  vim.api.nvim_win_set_cursor(0, { row + 1, col })
  local rest = shown.text:sub(#text + 1)
  if rest ~= "" then -- a partial accept: the rest stays on screen
    draw(shown.bufnr, row, col, rest)
  end
  return true
end

--- The part of the suggestion `kind` takes: "all", "word" or "line".
function M.part(text, kind)
  if kind == "word" then
    return text:match("^%s*[%w_]+") or text:match("^%s*[^%w_%s]+") or text:match("^%s+") or text
  elseif kind == "line" then
    local first = text:match("^\n[^\n]*") or text:match("^[^\n]+") or text
    return first
  end
  return text
end

--- Accept the suggestion, or its next word or line; false when none is shown.
function M.accept(kind)
  if native() then
    return vim.lsp.inline_completion.get() or false
  end
  local shown = state.shown
  if not shown or shown.bufnr ~= vim.api.nvim_get_current_buf() then
    return false
  end
  local row, col = cursor()
  if row ~= shown.row or col ~= shown.col then
    M.clear()
    return false
  end
  return insert(M.part(shown.text, kind or "all"))
end

function M.dismiss()
  cancel_pending()
  if state.shown then
    M.clear()
    return true
  end
  return false
end

--- :AgentCompletionToggle
function M.toggle()
  state.enabled = not state.enabled
  if not state.enabled then
    M.dismiss()
  end
  if native() then
    pcall(vim.lsp.inline_completion.enable, state.enabled)
  end
  require("agentls").notify("AgentLS completion " .. (state.enabled and "on" or "off"))
  return state.enabled
end

local function map(bufnr, key, action)
  if not key then
    return
  end
  local raw = vim.api.nvim_replace_termcodes(key, true, false, true)
  vim.keymap.set("i", key, function()
    if not action() then
      vim.api.nvim_feedkeys(raw, "n", false) -- nothing shown: the key does what it did
    end
  end, { buffer = bufnr, desc = "AgentLS completion" })
end

--- Set up a buffer the AgentLS client attached to.
function M.attach(bufnr, client)
  local keys = config.options.completion_keys
  if native() then
    pcall(vim.lsp.inline_completion.enable, state.enabled, { client_id = client.id, bufnr = bufnr })
    map(bufnr, keys.accept, function()
      return vim.lsp.inline_completion.get()
    end)
    return
  end
  if vim.b[bufnr].agentls_completion then
    return
  end
  vim.b[bufnr].agentls_completion = true
  local group = vim.api.nvim_create_augroup("agentls_completion_" .. bufnr, { clear = true })
  vim.api.nvim_create_autocmd("TextChangedI", {
    group = group,
    buffer = bufnr,
    callback = function()
      if state.accepted then
        state.accepted = false
        return
      end
      local shown = state.shown
      local row, col = cursor()
      if shown and row == shown.row and col > shown.col then
        -- typed through: what was typed matches the ghost text, the rest stays until the
        -- server answers (from its memory, no model call)
        local line = vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ""
        local typed = line:sub(shown.col + 1, col)
        if vim.startswith(shown.text, typed) and #typed < #shown.text then
          draw(bufnr, row, col, shown.text:sub(#typed + 1))
        else
          M.clear()
        end
      else
        M.clear()
      end
      if config.options.completion.auto then
        M.request(true)
      end
    end,
  })
  vim.api.nvim_create_autocmd("CursorMovedI", {
    group = group,
    buffer = bufnr,
    callback = function()
      local shown = state.shown
      local row, col = cursor()
      if shown and (row ~= shown.row or col ~= shown.col) then
        M.clear()
      end
    end,
  })
  vim.api.nvim_create_autocmd({ "InsertLeave", "BufLeave", "ModeChanged" }, {
    group = group,
    buffer = bufnr,
    callback = function()
      if vim.fn.mode() ~= "i" then
        M.dismiss()
      end
    end,
  })
  map(bufnr, keys.accept, function()
    return M.accept("all")
  end)
  map(bufnr, keys.accept_word, function()
    return M.accept("word")
  end)
  map(bufnr, keys.accept_line, function()
    return M.accept("line")
  end)
  map(bufnr, keys.dismiss, M.dismiss)
  if keys.request then
    vim.keymap.set("i", keys.request, function()
      M.request(false)
    end, { buffer = bufnr, desc = "AgentLS: ask for a completion" })
  end
end

local group = vim.api.nvim_create_augroup("agentls_completion", { clear = true })

function M.setup()
  state.enabled = config.options.completion.enabled
  vim.api.nvim_clear_autocmds({ group = group })
  vim.api.nvim_create_autocmd("LspAttach", {
    group = group,
    callback = function(args)
      local client = vim.lsp.get_client_by_id(args.data.client_id)
      if client and client.name == require("agentls").NAME then
        M.attach(args.buf, client)
      end
    end,
  })
end

return M
