-- The chat buffer: a plain markdown buffer (buftype=nofile) the person can edit, yank and
-- search. The transcript streams in from agentls/chatEvent; tool calls are folded lines;
-- the prompt area under the separator at the bottom is sent with keymaps.send. Mentions
-- typed there (#buffer, #file:…, @symbol …) go along as references the server resolves
-- (mentions.lua); a reopened session is rendered from the server's display-ready history
-- (agentls/turns), the same way a live turn is.
local config = require("agentls.config")
local mentions = require("agentls.mentions")

local M = {}

local SEPARATOR = "──── prompt (%s send, %s cancel) ────"
local ns = vim.api.nvim_create_namespace("agentls_chat")
local HISTORY_TURNS = 100 -- turns a reopened session shows at first (the latest ones)
local MORE = "_(%d earlier turns: <CR> on this line shows %d more)_"

-- One chat buffer is enough; it remembers its session, its running turn and the buffer the
-- person came from (what #buffer, #selection and #diagnostics mean).
local chat = {
  bufnr = nil,
  session = nil,
  run = nil,
  client = nil,
  request = nil,
  separator = nil,
  cancelled = nil, -- the run (or "pending") the person cancelled: its late text is dropped
  source = nil,
  model = nil,
  mode = nil,
  pending = {}, -- model / mode picked before the session exists: sent with the first turn
}

local function valid()
  return chat.bufnr and vim.api.nvim_buf_is_valid(chat.bufnr)
end

local function chat_windows()
  return valid() and vim.fn.win_findbuf(chat.bufnr) or {}
end

--- The line of the prompt separator (0-based): the last line that is exactly it.
local function separator_row()
  local lines = vim.api.nvim_buf_get_lines(chat.bufnr, 0, -1, false)
  for i = #lines, 1, -1 do
    if lines[i] == chat.separator then
      return i - 1
    end
  end
  -- The person deleted it: put it back at the end.
  vim.api.nvim_buf_set_lines(chat.bufnr, -1, -1, false, { chat.separator })
  return #lines
end

local function follow()
  for _, win in ipairs(chat_windows()) do
    if vim.api.nvim_get_current_win() ~= win then
      vim.api.nvim_win_set_cursor(win, { separator_row(), 0 })
    end
  end
end

--- Append `text` to the transcript (above the prompt area), continuing its last line.
local function append(text, hl)
  if not valid() then
    return
  end
  local row = separator_row()
  local last = row > 0 and vim.api.nvim_buf_get_lines(chat.bufnr, row - 1, row, false)[1] or ""
  local pieces = vim.split(text, "\n", { plain = true })
  pieces[1] = last .. pieces[1]
  local start = math.max(row - 1, 0)
  vim.api.nvim_buf_set_lines(chat.bufnr, start, row, false, pieces)
  if hl then
    for i = 0, #pieces - 1 do
      vim.api.nvim_buf_set_extmark(chat.bufnr, ns, start + i, 0, { line_hl_group = hl })
    end
  end
  follow()
end

--- Start a block: one blank line after the transcript's last non-empty line, then `lines`.
--- A reopened session is built the same way (add_block), so both read alike.
local function block(lines, hl)
  if not valid() then
    return
  end
  local row = separator_row()
  local last = row
  while last > 1 and vim.api.nvim_buf_get_lines(chat.bufnr, last - 1, last, false)[1] == "" do
    last = last - 1
  end
  local new = { "" }
  vim.list_extend(new, lines)
  vim.api.nvim_buf_set_lines(chat.bufnr, last, row, false, new)
  if hl then
    for i = 1, #lines do
      vim.api.nvim_buf_set_extmark(chat.bufnr, ns, last + i, 0, { line_hl_group = hl })
    end
  end
  chat.fresh = false
  follow()
end

local function add_block(out, lines)
  while #out > 1 and out[#out] == "" do
    table.remove(out)
  end
  table.insert(out, "")
  vim.list_extend(out, lines)
end

local function split(text)
  return vim.split(text or "", "\n", { plain = true })
end

local function new_block(text, hl)
  block(split(vim.trim(text)), hl)
end

-- --- what a turn looks like (live and reopened alike) ------------------------------------

local function size(bytes)
  if not bytes then
    return ""
  end
  if bytes >= 1000000 then
    return string.format("%.1f MB", bytes / 1000000)
  elseif bytes >= 1000 then
    return string.format("%.1f KB", bytes / 1000)
  end
  return bytes .. " B"
end

local function one_line(text)
  return ((text or ""):gsub("\n", " "))
end

--- The chips, refusals and notes under the person's words: "> " lines, each its own.
local function context_lines(attachments, refused, notes)
  local out = {}
  for _, chip in ipairs(attachments or {}) do
    local where = chip.range and (":" .. chip.range) or ""
    local lines = chip.lines and (chip.lines .. (chip.lines == 1 and " line" or " lines")) or ""
    local line = string.format("> 📎 %s `%s%s` %s, %s", chip.kind, chip.name, where, lines, size(chip.size))
    if chip.note and chip.note ~= "" then
      line = line .. " (" .. one_line(chip.note) .. ")"
    end
    table.insert(out, line)
  end
  for _, r in ipairs(refused or {}) do
    table.insert(out, string.format("> ⊘ %s `%s` not attached: %s", r.kind, r.name, one_line(r.reason)))
  end
  for _, note in ipairs(notes or {}) do -- what AgentLS told the model: not the person's words
    table.insert(out, "_AgentLS note: " .. one_line(note) .. "_")
  end
  return out
end

local function user_lines(text)
  local out = { "## You", "" }
  vim.list_extend(out, split(text))
  return out
end

local function assistant_header(model)
  return { "## AgentLS" .. ((model and model ~= vim.NIL and model ~= "") and (" · " .. model) or "") }
end

local function tool_call_lines(name, arguments)
  return { string.format("> ⚙ %s {{{", name or "tool"), "> " .. one_line(arguments) }
end

local function tool_result_line(ok, summary)
  return string.format("> %s %s }}}", ok == false and "✗" or "✓", one_line(summary))
end

local function tail_line(outcome, changes)
  local tail = {}
  if outcome and outcome ~= vim.NIL and outcome ~= "done" then
    table.insert(tail, "stopped: " .. outcome)
  end
  if changes and changes ~= vim.NIL then
    local applied = changes.applied
    table.insert(
      tail,
      (changes.text or "") .. (applied == true and " (applied)" or applied == false and " (not applied)" or "")
    )
  end
  return #tail > 0 and ("_" .. table.concat(tail, "; ") .. "_") or nil
end

-- --- the winbar: the session's model and mode ----------------------------------------------

local function winbar_text()
  local model = chat.pending.model or chat.model or "…"
  local mode = chat.pending.mode or chat.mode or "agent"
  -- Short, so a narrow window shows it whole; :AgentModel / :AgentMode switch them.
  return string.format("%%#AgentlsChatUser#AgentLS%%* %%<model: %s · mode: %s", (model:gsub("%%", "%%%%")), mode)
end

local function update_winbar()
  for _, win in ipairs(chat_windows()) do
    vim.wo[win].winbar = winbar_text()
  end
  vim.cmd.redrawstatus({ bang = true, mods = { emsg_silent = true } }) -- statusline() changed
end

--- The model and mode a new chat would use (the server's defaults), for the winbar: the
--- names only, answered from the configuration (probe = false: no backend is asked).
local function fetch_options()
  local client = require("agentls").client(chat.source)
  if not client or chat.model then
    return
  end
  require("agentls").call(client, "agentls/models", { sessionId = chat.session, probe = false }, function(err, result)
    if err or not result then
      return
    end
    if result.session then
      chat.model, chat.mode = result.session.model, result.session.mode
    else
      for _, b in ipairs(result.backends or {}) do
        if b.active then
          chat.model = b.model
        end
      end
      chat.mode = chat.mode or result.defaultMode
    end
    update_winbar()
  end)
end

-- --- the buffer and its window --------------------------------------------------------------

local function setup_buffer()
  local bufnr = vim.api.nvim_create_buf(true, true)
  vim.api.nvim_buf_set_name(bufnr, "AgentLS chat")
  vim.bo[bufnr].buftype = "nofile"
  vim.bo[bufnr].swapfile = false
  vim.bo[bufnr].filetype = "markdown"
  -- Treesitter's markdown highlighting where the parser is installed (Neovim bundles it).
  pcall(vim.treesitter.start, bufnr, "markdown")
  local keys = config.options.keymaps
  local sep = string.format(SEPARATOR, keys.send or ":AgentSend", keys.cancel or ":AgentCancel")
  vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, { "# AgentLS chat", sep, "" })
  chat.separator = sep
  if keys.send then
    vim.keymap.set({ "n", "i" }, keys.send, M.send_prompt_area, { buffer = bufnr, desc = "AgentLS: send the prompt" })
  end
  if keys.cancel then
    vim.keymap.set({ "n", "i" }, keys.cancel, M.cancel, { buffer = bufnr, desc = "AgentLS: cancel the turn" })
  end
  vim.keymap.set("n", "q", M.close, { buffer = bufnr, desc = "AgentLS: close the chat" })
  vim.keymap.set("n", "<CR>", function()
    if chat.history_start and vim.api.nvim_get_current_line():match("^_%(%d+ earlier turns") then
      vim.schedule(M.more)
      return ""
    end
    return "<CR>"
  end, { buffer = bufnr, expr = true, desc = "AgentLS: on the 'earlier turns' line, show them" })
  -- Mentions complete through the built-in completion (<C-x><C-o>, or any plugin that
  -- reads omnifunc / completefunc).
  vim.bo[bufnr].omnifunc = "v:lua.require'agentls.mentions'.complete"
  vim.bo[bufnr].completefunc = "v:lua.require'agentls.mentions'.complete"
  chat.bufnr = bufnr
  return bufnr
end

--- Remember the buffer the person is in, unless it is the chat.
local function remember_source()
  local current = vim.api.nvim_get_current_buf()
  if current ~= chat.bufnr and vim.bo[current].buftype == "" then
    chat.source = current
  end
end

--- Show the chat (open its window if none) and go to it; returns its window.
local function show()
  remember_source()
  if not valid() then
    setup_buffer()
  end
  local wins = chat_windows()
  local win = wins[1]
  if not win then
    local layout = config.options.chat.layout
    vim.cmd(layout == "tab" and "tabnew" or (layout == "split" and "botright split" or "botright vsplit"))
    win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(win, chat.bufnr)
    vim.wo[win].foldmethod = "marker"
    vim.wo[win].foldlevel = 0
    vim.wo[win].wrap = true
    vim.wo[win].linebreak = true
  end
  vim.api.nvim_set_current_win(win)
  update_winbar()
  fetch_options()
  return win
end

--- Close the chat's windows (the buffer, its session and a running turn stay).
function M.close()
  for _, win in ipairs(chat_windows()) do
    if #vim.api.nvim_list_wins() > 1 then
      vim.api.nvim_win_close(win, false)
    else
      vim.cmd("enew") -- the last window: leave it, on an empty buffer
    end
  end
end

--- The text the person typed under the separator.
local function prompt_area()
  local row = separator_row()
  local lines = vim.api.nvim_buf_get_lines(chat.bufnr, row + 1, -1, false)
  return vim.trim(table.concat(lines, "\n"))
end

-- --- sending ------------------------------------------------------------------------------

--- Why a turn whose edit is in review goes on: the review ends it.
local function review_wait()
  local k = config.options.review_keys
  return string.format(
    "its edit is waiting for your review; the turn ends with it (%s keep all, %s reject all)",
    k.accept_all or ":AgentReview accept_all",
    k.reject_all or ":AgentReview reject_all"
  )
end

--- Send `prompt` (with an optional context {uri, range}) as one agentls/chat turn.
function M.send(prompt, context)
  if prompt == nil or vim.trim(prompt) == "" then
    vim.notify("AgentLS: type a prompt under the separator first", vim.log.levels.WARN)
    return
  end
  local agentls = require("agentls")
  remember_source()
  local source = chat.source or vim.api.nvim_get_current_buf()
  if chat.run then
    local why = require("agentls.review").waiting() and review_wait() or ":AgentCancel stops it"
    vim.notify("AgentLS: a turn is still running; " .. why, vim.log.levels.WARN)
    return
  end
  local client = agentls.client(source)
  if not client then
    agentls.notify(
      "AgentLS is not running: open a file of the project first (:checkhealth agentls)",
      vim.log.levels.ERROR
    )
    return
  end
  show()
  block(user_lines(prompt), nil)
  local params = {
    prompt = prompt,
    sessionId = chat.session,
    context = context,
    references = mentions.references(prompt, source),
    model = chat.pending.model,
    mode = chat.pending.mode,
  }
  if #params.references == 0 then
    params.references = nil
  end
  chat.client = client
  chat.run = "pending"
  chat.cancelled = nil
  local _, id = agentls.call(client, "agentls/chat", params, function(err, result)
    chat.run, chat.request = nil, nil
    if err then
      new_block("\n**Error:** " .. (err.message or vim.inspect(err)) .. "\n", "AgentlsChatError")
      return
    end
    chat.pending = {}
    chat.session = result.sessionId
    local tail = {}
    if result.stopReason and result.stopReason ~= "done" then
      table.insert(tail, "stopped: " .. result.stopReason)
    end
    if result.applied == true then
      table.insert(tail, "edit applied")
    elseif result.partial then -- what the review kept, as the server read it
      table.insert(tail, "edit partly applied: " .. (result.failureReason or ""))
    elseif result.applied == false then
      table.insert(tail, "edit not applied" .. (result.failureReason and (": " .. result.failureReason) or ""))
    end
    if #tail > 0 then
      new_block("\n_" .. table.concat(tail, "; ") .. "_\n")
    end
  end, source)
  chat.request = id
end

function M.send_prompt_area()
  if not valid() then
    return
  end
  local prompt = prompt_area()
  local row = separator_row()
  vim.api.nvim_buf_set_lines(chat.bufnr, row + 1, -1, false, { "" })
  M.send(prompt)
end

--- :AgentChat [prompt]: with a prompt, send it; without, toggle the chat: open it, go to
--- it, or (when the cursor is in it) close it.
function M.open(prompt)
  if prompt and prompt ~= "" then
    show()
    M.send(prompt)
    return
  end
  local wins = chat_windows()
  local current = vim.api.nvim_get_current_win()
  if vim.tbl_contains(wins, current) then
    M.close()
    return
  end
  local win = show()
  vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(chat.bufnr), 0 })
end

--- :'<,'>AgentAsk {prompt}: the selection goes along as context.
function M.ask(prompt, line1, line2)
  local bufnr = vim.api.nvim_get_current_buf()
  local last = vim.api.nvim_buf_get_lines(bufnr, line2 - 1, line2, false)[1] or ""
  local context = {
    uri = vim.uri_from_bufnr(bufnr),
    range = { start = { line = line1 - 1, character = 0 }, ["end"] = { line = line2 - 1, character = #last } },
  }
  M.send(prompt, context)
end

--- :AgentCancel: stop the turn; whatever it still streams is dropped.
function M.cancel()
  if not chat.run or not chat.client then
    vim.notify("AgentLS: nothing is running", vim.log.levels.INFO)
    return
  end
  chat.cancelled = chat.run
  if chat.run == "pending" then
    if chat.request then
      require("agentls").cancel_request(chat.client, chat.request)
    end
  else
    local run = chat.run
    require("agentls").call(chat.client, "agentls/cancel", { runId = run }, function(err, result)
      if not err and result and result.cancelled then
        return
      end
      -- Not stopped (its edit is out for review, or it had ended): say so, show what follows.
      if chat.cancelled == run then
        chat.cancelled = nil
      end
      local why = require("agentls.review").waiting() and review_wait()
        or (err and err.message or "it had already finished")
      new_block("\n_not stopped: " .. why .. "_\n")
    end)
  end
  new_block("\n_cancelling…_\n")
end

--- agentls/chatEvent: the transcript as it happens.
function M.on_event(event, _)
  if (event.kind == "status" and event.topic ~= "instructions") or event.kind == "retry" then
    -- (which instruction files a session loaded is for the log, not a message to wait on)
    require("agentls").notify("AgentLS: " .. (event.message or event.kind))
  elseif event.kind == "error" then
    require("agentls").notify("AgentLS: " .. (event.message or "error"), vim.log.levels.WARN)
  end
  if not valid() or (chat.session and event.sessionId ~= chat.session) then
    return
  end
  if chat.run == "pending" then
    if chat.cancelled == "pending" then
      chat.cancelled = event.runId
    end
    chat.run, chat.session = event.runId, event.sessionId
  elseif event.runId ~= chat.run and event.kind ~= "done" then
    if chat.run ~= nil then
      return
    end
  end
  if chat.cancelled and event.runId == chat.cancelled then
    return -- the person cancelled this run: what it still sends is not shown
  end
  if event.kind == "turn" then
    chat.model, chat.mode = event.model, event.mode
    update_winbar()
    local lines = context_lines(event.attachments, event.refused, event.notes)
    if #lines > 0 then
      block(lines)
    end
    block(assistant_header(event.model))
    chat.fresh = true -- the answer's text starts a block of its own
  elseif event.kind == "text" then
    local text = event.text or ""
    if chat.fresh then
      text = text:gsub("^\n+", "")
      if text ~= "" then
        block(split(text))
      end
    else
      append(text)
    end
  elseif event.kind == "toolCall" then
    block(tool_call_lines(event.name, event.arguments), "AgentlsChatTool")
  elseif event.kind == "toolResult" then
    append("\n" .. tool_result_line(event.ok, event.summary), "AgentlsChatTool")
    chat.fresh = true
  elseif event.kind == "error" then
    new_block(
      "\n**Error:** "
        .. (event.message or "")
        .. (event.hint and event.hint ~= "" and (" (" .. event.hint .. ")") or "")
        .. "\n",
      "AgentlsChatError"
    )
  end
end

-- --- sessions and their history -------------------------------------------------------------

local function session_label(s)
  local when = os.date("%Y-%m-%d %H:%M", math.floor(s.updatedAt or 0))
  local turns = s.messageCount and (" · " .. s.messageCount .. " messages") or ""
  return string.format("%s  %s  (%s%s)", when, s.title or s.id, s.model or "?", turns)
end

--- :AgentSessions: pick a session (vim.ui.select) and show its history in the chat buffer.
function M.sessions()
  local agentls = require("agentls")
  agentls.request("agentls/sessions", { limit = 50 }, function(err, result, client)
    if err then
      agentls.notify("AgentLS: " .. (err.message or "no sessions"), vim.log.levels.ERROR)
      return
    end
    local sessions = result and result.sessions or {}
    if #sessions == 0 then
      agentls.notify("AgentLS: no sessions yet; :AgentChat starts one")
      return
    end
    vim.ui.select(
      sessions,
      { prompt = "AgentLS session", format_item = session_label, kind = "agentls.session" },
      function(choice)
        if choice then
          M.reopen(choice.id, client)
        end
      end
    )
  end)
end

--- The lines of one display-ready turn (agentls/turns), and which of them are tool lines.
local function turn_lines(turn, out, tool_rows)
  local user = turn.user or {}
  add_block(out, user_lines(user.text))
  local context = context_lines(user.attachments, user.refused, user.notes)
  if #context > 0 then
    add_block(out, context)
  end
  if #(turn.steps or {}) > 0 or (turn.outcome and turn.outcome ~= vim.NIL) then
    add_block(out, assistant_header(turn.model))
  end
  for _, step in ipairs(turn.steps or {}) do
    if step.kind == "text" then
      local text = (step.text or ""):gsub("^\n+", "")
      if text ~= "" then
        add_block(out, split(text))
      end
    elseif step.kind == "toolCall" then
      local call = tool_call_lines(step.name, step.arguments)
      table.insert(call, tool_result_line(step.ok, step.summary))
      add_block(out, call)
      for row = #out - #call + 1, #out do
        tool_rows[row] = true
      end
    end
  end
  local tail = tail_line(turn.outcome, turn.changes)
  if tail then
    add_block(out, { tail })
  end
end

--- Render a page of agentls/turns into a fresh chat buffer; returns the number of turns.
local function more_line(start)
  return string.format(MORE, start, math.min(start, HISTORY_TURNS))
end

local function render_history(page)
  chat.run, chat.cancelled = nil, nil
  local last = page.turns and page.turns[#page.turns]
  chat.model = last and last.model or chat.model
  chat.mode = last and last.mode or chat.mode
  show() -- the chat buffer is reused: its window, folds and keys stay
  vim.api.nvim_buf_clear_namespace(chat.bufnr, ns, 0, -1)
  chat.history_start = page.hasMore and page.start or nil
  local out = { "# AgentLS chat" }
  local tool_rows = {}
  if page.hasMore then
    table.insert(out, more_line(page.start))
  end
  for _, turn in ipairs(page.turns or {}) do
    turn_lines(turn, out, tool_rows)
  end
  table.insert(out, chat.separator)
  table.insert(out, "")
  -- Folds (markers) and undo are not worked out line by line while the page goes in.
  local wins = chat_windows()
  for _, win in ipairs(wins) do
    vim.wo[win].foldmethod = "manual"
  end
  local undolevels = vim.bo[chat.bufnr].undolevels
  vim.bo[chat.bufnr].undolevels = -1
  vim.api.nvim_buf_set_lines(chat.bufnr, 0, -1, false, out)
  vim.bo[chat.bufnr].undolevels = undolevels
  for _, win in ipairs(wins) do
    vim.wo[win].foldmethod = "marker"
  end
  for row in pairs(tool_rows) do
    vim.api.nvim_buf_set_extmark(chat.bufnr, ns, row - 1, 0, { line_hl_group = "AgentlsChatTool" })
  end
  update_winbar()
  for _, win in ipairs(chat_windows()) do
    vim.api.nvim_win_set_cursor(win, { #out, 0 })
  end
  return #(page.turns or {})
end

--- Open a stored session in the chat buffer, rendered from the server's history;
--- `on_done(turns)` is called once it is shown.
function M.open_session(session_id, on_done, client)
  client = client or require("agentls").client(chat.source)
  if not client then
    require("agentls").notify("AgentLS is not running: open a file of the project first", vim.log.levels.ERROR)
    return
  end
  local params = { sessionId = session_id, limit = HISTORY_TURNS }
  require("agentls").call(client, "agentls/turns", params, function(err, result)
    if err then
      vim.notify("AgentLS: " .. (err.message or "no history"), vim.log.levels.ERROR)
      return
    end
    chat.session, chat.model, chat.mode, chat.pending = session_id, nil, nil, {}
    local turns = render_history(result)
    if on_done then
      on_done(turns)
    end
  end)
end

--- <CR> on the "earlier turns" line: the page of turns before the ones shown, put above them.
function M.more()
  local start = chat.history_start
  if not valid() or not start or not chat.session then
    return
  end
  local params = { sessionId = chat.session, before = start, limit = HISTORY_TURNS }
  require("agentls").request("agentls/turns", params, function(err, page)
    if err or not valid() then
      vim.notify("AgentLS: " .. (err and err.message or "the chat is gone"), vim.log.levels.ERROR)
      return
    end
    local out, tool_rows = {}, {}
    for _, turn in ipairs(page.turns or {}) do
      turn_lines(turn, out, tool_rows)
    end
    local shift = 0 -- out[i] lands on row i (0-based): row 1 is the line it replaces
    if page.hasMore then
      table.insert(out, 1, more_line(page.start))
      shift = 1
    end
    chat.history_start = page.hasMore and page.start or nil
    -- Row 1 (0-based) is the "earlier turns" line: replaced by these turns.
    vim.api.nvim_buf_set_lines(chat.bufnr, 1, 2, false, out)
    for row in pairs(tool_rows) do
      vim.api.nvim_buf_set_extmark(chat.bufnr, ns, row + shift, 0, { line_hl_group = "AgentlsChatTool" })
    end
  end, chat.source)
end

function M.reopen(session_id, client)
  M.open_session(session_id, nil, client)
end

-- --- model and mode -------------------------------------------------------------------------

local function set_option(key, value)
  if not chat.session then -- no session yet: the first turn carries it
    chat.pending[key] = value
    update_winbar()
    require("agentls").notify(string.format("AgentLS: %s %s for this chat's first turn", key, value))
    return
  end
  local method = key == "model" and "agentls/setModel" or "agentls/setMode"
  require("agentls").request(method, { sessionId = chat.session, [key] = value }, function(err, result)
    if err then
      require("agentls").notify("AgentLS: " .. (err.message or "refused"), vim.log.levels.ERROR)
      return
    end
    chat.model, chat.mode = result.model, result.mode
    update_winbar()
    require("agentls").notify("AgentLS: " .. (result.message or ""))
  end, chat.source)
end

-- The last probing answer of agentls/models per server (client id): the backends as they
-- answered. vim.ui.select cannot change its list once open, so :AgentModel opens at once with
-- what is known (this, or the configured models marked "not checked yet") and asks the
-- backends again for the next time.
local probed = {}

--- The models to pick from: the active backend's first, the others by backend name.
local function model_items(backends, checked)
  local items = {}
  for _, b in ipairs(backends or {}) do
    if b.status ~= "cli" then
      for i, model in ipairs(b.models or {}) do
        table.insert(items, {
          backend = b.name,
          model = model,
          status = b.status,
          checked = checked,
          active = b.active and 0 or 1,
          order = i,
        })
      end
    end
  end
  table.sort(items, function(x, y)
    if x.active ~= y.active then
      return x.active < y.active
    end
    if x.backend ~= y.backend then
      return x.backend < y.backend
    end
    return x.order < y.order
  end)
  return items
end

--- "gpt-4o  (openai)"; a model not known to be served says why: "(openai, not checked
--- yet)" before the backends answered, "(openai, unreachable)" after.
local function model_label(i)
  local status = ""
  if not i.checked then
    status = ", not checked yet"
  elseif i.status ~= "available" then
    status = ", " .. i.status
  end
  return string.format("%s  (%s%s)", i.model, i.backend, status)
end

--- Asks the backends for their models (up to about a second each, side by side); the answer
--- is kept for the next :AgentModel.
local function probe_models(client)
  require("agentls").call(client, "agentls/models", { sessionId = chat.session }, function(err, result)
    if err or not result then
      probed[client.id] = nil
      require("agentls").notify(
        "AgentLS: the backends could not be asked for their models: " .. (err and err.message or "no answer"),
        vim.log.levels.WARN
      )
      return
    end
    probed[client.id] = result.backends or {}
  end)
end

local function show_models(items)
  vim.ui.select(items, { prompt = "AgentLS model", format_item = model_label }, function(choice)
    if choice then
      set_option("model", choice.model)
    end
  end)
end

--- :AgentModel [name]: switch the chat's model (a list to pick from without a name). The list
--- opens at once: the backends' last answer, or the configured models (probe = false, nothing
--- asked over the network) marked "not checked yet"; the backends are asked meanwhile.
function M.pick_model(name)
  if name and name ~= "" then
    return set_option("model", name)
  end
  local agentls = require("agentls")
  local client = agentls.client(chat.source or vim.api.nvim_get_current_buf())
  if client and probed[client.id] then
    show_models(model_items(probed[client.id], true))
  else
    agentls.request("agentls/models", { sessionId = chat.session, probe = false }, function(err, result)
      if err then
        agentls.notify("AgentLS: " .. (err.message or "no models"), vim.log.levels.ERROR)
        return
      end
      show_models(model_items(result.backends, false))
    end, chat.source)
  end
  if client then
    probe_models(client) -- for the next time
  end
end

--- The backends' last answer to :AgentModel's probe (nil before one came): for tests.
function M.probed_models()
  local client = require("agentls").client(chat.source)
  return client and probed[client.id]
end

--- :AgentMode [ask|edit|agent]: switch the chat's mode.
function M.pick_mode(name)
  if name and name ~= "" then
    return set_option("mode", name)
  end
  local modes = {
    { name = "ask", description = "reads and answers; changes nothing" },
    { name = "edit", description = "proposes file changes for your review; no commands" },
    { name = "agent", description = "changes files and runs sandboxed commands" },
  }
  vim.ui.select(modes, {
    prompt = "AgentLS mode",
    format_item = function(m)
      return m.name .. "  " .. m.description
    end,
  }, function(choice)
    if choice then
      set_option("mode", choice.name)
    end
  end)
end

--- For a statusline: the chat's model and mode, "" before a chat is opened.
function M.statusline()
  if not valid() then
    return ""
  end
  return string.format("%s · %s", chat.pending.model or chat.model or "…", chat.pending.mode or chat.mode or "agent")
end

function M.state()
  return chat
end

return M
