-- Next-edit suggestions (`:help agentls-next-edit`): the edit the server predicts you are
-- about to make near the cursor (agentls/nextEdit, the same as textDocument/copilotInlineEdit),
-- drawn where it goes: the text it replaces highlighted, the new text as virtual text and
-- lines. Asked for in normal mode after a change (insert mode belongs to the ghost text of
-- completion.lua: one suggestion on screen at a time). When it is off screen a hint at the
-- cursor says where; the accept key jumps there first, then applies it, tells the server
-- (the edit's command) and asks for the next. The dismiss key tells the server it was turned
-- down.
local config = require("agentls.config")
local suggestions = require("agentls.suggestions")

local M = {}

local ns = vim.api.nvim_create_namespace("agentls_next_edit")
local METHOD = "agentls/nextEdit"
local state = {
  status = nil, -- the server's agentls/nextEditStatus
  message = "",
  shown = nil, -- { bufnr, client, edit, version, hint }
  pending = nil, -- { client, id }
  tick = 0, -- answers to a request older than the last are dropped
  timer = nil,
}

--- The suggestion shown now ({ text, range }) or nil: for tests and statuslines.
function M.shown()
  local shown = state.shown
  return shown and { text = shown.edit.text, range = shown.edit.range, hint = shown.hint } or nil
end

--- The server's status: "idle", "waiting", "off", "error"; "disabled" when the option is off.
function M.status()
  if not config.options.next_edit.enabled then
    return "disabled"
  end
  return state.status or "off"
end

function M.on_status(params)
  suggestions.on_status(state, params, "next edit")
end

function M.clear()
  suggestions.clear(state, ns)
end

local function cancel_pending()
  if state.timer then
    state.timer:stop()
  end
  suggestions.cancel_pending(state)
end

local function command(client, cmd)
  if cmd and cmd.command then
    require("agentls").call(
      client,
      "workspace/executeCommand",
      { command = cmd.command, arguments = cmd.arguments },
      function() end
    )
  end
end

--- The edit's range as byte positions of the buffer: { srow, scol, erow, ecol }.
local function byte_range(bufnr, range, encoding)
  local function col(row, character)
    local line = vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ""
    local ok, index = pcall(vim.str_byteindex, line, encoding, character, false)
    return ok and index or #line
  end
  local s, e = range.start, range["end"]
  return s.line, col(s.line, s.character), e.line, col(e.line, e.character)
end

local function visible(row)
  return row + 1 >= vim.fn.line("w0") and row + 1 <= vim.fn.line("w$")
end

local function in_the_way()
  -- the completion menu or inline completion's ghost text is on screen: it goes first
  return vim.fn.pumvisible() == 1 or require("agentls.completion").shown() ~= nil
end

local function draw(bufnr, client, edit, version)
  M.clear()
  local lines = vim.api.nvim_buf_line_count(bufnr)
  local srow, scol, erow, ecol = byte_range(bufnr, edit.range, client.offset_encoding)
  if srow >= lines or erow >= lines then
    return false
  end
  if erow > srow or ecol > scol then
    vim.api.nvim_buf_set_extmark(bufnr, ns, srow, scol, {
      end_row = erow,
      end_col = ecol,
      hl_group = "AgentlsNextEditDelete",
      strict = false,
    })
  end
  local added = vim.split(((edit.text or ""):gsub("\r\n", "\n")), "\n", { plain = true })
  if edit.text ~= "" then
    local opts = { virt_text = { { added[1], "AgentlsNextEditAdd" } }, virt_text_pos = "inline", strict = false }
    if #added > 1 then
      opts.virt_lines = {}
      for i = 2, #added do
        table.insert(opts.virt_lines, { { added[i], "AgentlsNextEditAdd" } })
      end
    end
    vim.api.nvim_buf_set_extmark(bufnr, ns, erow, ecol, opts)
  end
  local hint = nil
  if not visible(srow) then -- off screen: say where, at the cursor
    local key = config.options.next_edit_keys.accept or "the accept key"
    hint = string.format("next edit at line %d (%s)", srow + 1, key)
    local cursor_row = vim.api.nvim_win_get_cursor(0)[1] - 1
    vim.api.nvim_buf_set_extmark(bufnr, ns, cursor_row, 0, {
      virt_text = { { "  " .. hint, "AgentlsNextEditHint" } },
      virt_text_pos = "eol",
    })
  end
  state.shown = { bufnr = bufnr, client = client, edit = edit, version = version, hint = hint }
  client:notify("textDocument/didShowInlineEdit", { item = { command = edit.command } })
  return true
end

--- Ask the server for the next edit at the cursor.
function M.request()
  local bufnr = vim.api.nvim_get_current_buf()
  local agentls = require("agentls")
  local client = agentls.client(bufnr)
  if not config.options.next_edit.enabled or not client or state.status == "off" then
    return
  end
  cancel_pending()
  state.tick = state.tick + 1
  local tick = state.tick
  local version = vim.lsp.util.buf_versions[bufnr]
  local params = vim.lsp.util.make_position_params(0, client.offset_encoding)
  params.textDocument.version = version
  local ok, id = agentls.call(client, METHOD, params, function(err, result)
    if tick ~= state.tick or err or not result or not vim.api.nvim_buf_is_valid(bufnr) then
      return
    end
    if vim.lsp.util.buf_versions[bufnr] ~= version or vim.api.nvim_get_current_buf() ~= bufnr then
      return -- the buffer moved on: its own request follows
    end
    local edit = result.edits and result.edits[1]
    if not edit or vim.fn.mode() ~= "n" or in_the_way() then
      M.clear()
      return
    end
    draw(bufnr, client, edit, version)
  end, bufnr)
  if ok then
    state.pending = { client = client, id = id }
  end
end

--- Ask after the configured pause (a newer change restarts it).
function M.request_later()
  if not config.options.next_edit.enabled then
    return
  end
  state.timer = state.timer or vim.uv.new_timer()
  state.timer:stop()
  state.timer:start(config.options.next_edit.debounce_ms, 0, vim.schedule_wrap(M.request))
end

--- Accept: jump to the suggestion when it is off screen, else apply it, tell the server and
--- ask for the next. False when none is shown here.
function M.accept()
  local shown = state.shown
  local bufnr = vim.api.nvim_get_current_buf()
  if not shown or shown.bufnr ~= bufnr then
    return false
  end
  if vim.lsp.util.buf_versions[bufnr] ~= shown.version then
    M.clear()
    return false
  end
  local srow, scol = byte_range(bufnr, shown.edit.range, shown.client.offset_encoding)
  if shown.hint then -- off screen: the first press jumps to it
    vim.cmd("normal! m'") -- the jump list gets the place left
    vim.api.nvim_win_set_cursor(0, { srow + 1, scol })
    vim.cmd("normal! zz")
    draw(bufnr, shown.client, shown.edit, shown.version)
    return true
  end
  M.clear()
  cancel_pending()
  vim.lsp.util.apply_text_edits(
    { { range = shown.edit.range, newText = shown.edit.text } },
    bufnr,
    shown.client.offset_encoding
  )
  local added = vim.split((shown.edit.text:gsub("\r\n", "\n")), "\n", { plain = true })
  local row = srow + #added - 1
  local col = (#added == 1 and scol or 0) + #added[#added]
  pcall(vim.api.nvim_win_set_cursor, 0, { row + 1, math.max(0, col - 1) })
  command(shown.client, shown.edit.command)
  state.skip_change = true -- the TextChanged this causes is ours: ask at once instead
  M.request()
  return true
end

--- Dismiss: hide it and tell the server it was turned down. False when none is shown.
function M.dismiss()
  local shown = state.shown
  cancel_pending()
  if not shown then
    return false
  end
  M.clear()
  local id = shown.edit.command and shown.edit.command.arguments and shown.edit.command.arguments[1]
  if id then
    command(shown.client, { command = "agentls.nextEdit.reject", arguments = { id } })
  end
  return true
end

local function map(bufnr, key, action, desc)
  if not key then
    return
  end
  local raw = vim.api.nvim_replace_termcodes(key, true, false, true)
  vim.keymap.set("n", key, function()
    if not action() then
      vim.api.nvim_feedkeys(raw, "n", false) -- nothing shown: the key does what it did
    end
  end, { buffer = bufnr, desc = desc })
end

--- Set up a buffer the AgentLS client attached to.
function M.attach(bufnr)
  if not config.options.next_edit.enabled or vim.b[bufnr].agentls_next_edit then
    return
  end
  vim.b[bufnr].agentls_next_edit = true
  local group = vim.api.nvim_create_augroup("agentls_next_edit_" .. bufnr, { clear = true })
  vim.api.nvim_create_autocmd({ "TextChanged", "InsertLeave" }, {
    group = group,
    buffer = bufnr,
    callback = function(args)
      if args.event == "TextChanged" and state.skip_change then
        state.skip_change = false
        return
      end
      M.clear()
      M.request_later()
    end,
  })
  vim.api.nvim_create_autocmd({ "InsertEnter", "TextChangedI", "BufLeave" }, {
    group = group,
    buffer = bufnr,
    callback = function()
      cancel_pending()
      M.clear() -- insert mode is the ghost text's
    end,
  })
  local keys = config.options.next_edit_keys
  map(bufnr, keys.accept, M.accept, "AgentLS: accept the next edit (or jump to it)")
  map(bufnr, keys.dismiss, M.dismiss, "AgentLS: dismiss the next edit")
end

local group = vim.api.nvim_create_augroup("agentls_next_edit", { clear = true })

function M.setup()
  vim.api.nvim_clear_autocmds({ group = group })
  if not config.options.next_edit.enabled then
    return
  end
  vim.api.nvim_create_autocmd("LspAttach", {
    group = group,
    callback = function(args)
      local client = vim.lsp.get_client_by_id(args.data.client_id)
      if client and client.name == require("agentls").NAME then
        M.attach(args.buf)
      end
    end,
  })
end

return M
