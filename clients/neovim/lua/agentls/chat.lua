-- The chat buffer: a plain markdown buffer (buftype=nofile) the person can edit, yank and
-- search. The transcript streams in from agentls/chatEvent; tool calls are folded lines;
-- the prompt area under the separator at the bottom is sent with keymaps.send.
local config = require("agentls.config")

local M = {}

local SEPARATOR = "──── prompt (%s send, %s cancel) ────"
local ns = vim.api.nvim_create_namespace("agentls_chat")

-- One chat buffer per tab page is enough; it remembers its session and its running turn.
local chat = { bufnr = nil, session = nil, run = nil, client = nil, request = nil, separator = nil }

local function valid()
  return chat.bufnr and vim.api.nvim_buf_is_valid(chat.bufnr)
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
  for _, win in ipairs(vim.fn.win_findbuf(chat.bufnr)) do
    if vim.api.nvim_get_current_win() ~= win then
      vim.api.nvim_win_set_cursor(win, { separator_row(), 0 })
    end
  end
end

local function new_block(text, hl)
  append("\n" .. text, hl)
end

local function setup_buffer()
  local bufnr = vim.api.nvim_create_buf(true, true)
  vim.api.nvim_buf_set_name(bufnr, "AgentLS chat")
  vim.bo[bufnr].buftype = "nofile"
  vim.bo[bufnr].swapfile = false
  vim.bo[bufnr].filetype = "markdown"
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
  chat.bufnr = bufnr
  return bufnr
end

local function show()
  if not valid() then
    setup_buffer()
  end
  if #vim.fn.win_findbuf(chat.bufnr) == 0 then
    local layout = config.options.chat.layout
    vim.cmd(layout == "tab" and "tabnew" or (layout == "split" and "botright split" or "botright vsplit"))
    vim.api.nvim_win_set_buf(0, chat.bufnr)
    vim.wo.foldmethod = "marker"
    vim.wo.foldlevel = 0
    vim.wo.wrap = true
    vim.wo.linebreak = true
  end
end

--- The text the person typed under the separator.
local function prompt_area()
  local row = separator_row()
  local lines = vim.api.nvim_buf_get_lines(chat.bufnr, row + 1, -1, false)
  return vim.trim(table.concat(lines, "\n"))
end

--- Send `prompt` (with an optional context {uri, range}) as one agentls/chat turn.
function M.send(prompt, context)
  if prompt == nil or vim.trim(prompt) == "" then
    vim.notify("AgentLS: type a prompt under the separator first", vim.log.levels.WARN)
    return
  end
  local agentls = require("agentls")
  local source = vim.api.nvim_get_current_buf()
  if chat.run then
    vim.notify("AgentLS: a turn is still running; :AgentCancel stops it", vim.log.levels.WARN)
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
  new_block("\n## You\n\n" .. prompt .. "\n\n## AgentLS\n\n", nil)
  local params = { prompt = prompt, sessionId = chat.session, context = context }
  chat.client = client
  chat.run = "pending"
  local _, id = agentls.call(client, "agentls/chat", params, function(err, result)
    chat.run, chat.request = nil, nil
    if err then
      new_block("\n**Error:** " .. (err.message or vim.inspect(err)) .. "\n", "AgentlsChatError")
      return
    end
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

--- :AgentChat [prompt]
function M.open(prompt)
  show()
  if prompt and prompt ~= "" then
    M.send(prompt)
  else
    vim.api.nvim_win_set_cursor(0, { vim.api.nvim_buf_line_count(chat.bufnr), 0 })
  end
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

--- :AgentCancel
function M.cancel()
  if not chat.run or not chat.client then
    vim.notify("AgentLS: nothing is running", vim.log.levels.INFO)
    return
  end
  if chat.run == "pending" then
    if chat.request then
      require("agentls").cancel_request(chat.client, chat.request)
    end
  else
    require("agentls").call(chat.client, "agentls/cancel", { runId = chat.run }, function() end)
  end
  new_block("\n_cancelling…_\n")
end

--- agentls/chatEvent: the transcript as it happens.
function M.on_event(event, _)
  if event.kind == "status" or event.kind == "retry" then
    require("agentls").notify("AgentLS: " .. (event.message or event.kind))
  elseif event.kind == "error" then
    require("agentls").notify("AgentLS: " .. (event.message or "error"), vim.log.levels.WARN)
  end
  if not valid() or (chat.session and event.sessionId ~= chat.session) then
    return
  end
  if chat.run == "pending" then
    chat.run, chat.session = event.runId, event.sessionId
  elseif event.runId ~= chat.run and event.kind ~= "done" then
    if chat.run ~= nil then
      return
    end
  end
  if event.kind == "text" then
    append(event.text or "")
  elseif event.kind == "toolCall" then
    new_block(
      string.format("\n> ⚙ %s {{{\n> %s", event.name or "tool", (event.arguments or ""):gsub("\n", " ")),
      "AgentlsChatTool"
    )
  elseif event.kind == "toolResult" then
    new_block(
      string.format("\n> %s %s }}}\n", event.ok == false and "✗" or "✓", (event.summary or ""):gsub("\n", " ")),
      "AgentlsChatTool"
    )
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

--- :AgentSessions: pick a session and show its history in the chat buffer.
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
    vim.ui.select(sessions, {
      prompt = "AgentLS session",
      format_item = function(s)
        return string.format("%s  %s", os.date("%Y-%m-%d %H:%M", math.floor(s.updatedAt or 0)), s.title or s.id)
      end,
    }, function(choice)
      if choice then
        M.reopen(choice.id, client)
      end
    end)
  end)
end

function M.reopen(session_id, client)
  require("agentls").call(client, "agentls/history", { sessionId = session_id }, function(err, result)
    if err then
      vim.notify("AgentLS: " .. (err.message or "no history"), vim.log.levels.ERROR)
      return
    end
    if valid() then
      vim.api.nvim_buf_delete(chat.bufnr, { force = true })
    end
    chat.bufnr, chat.run = nil, nil
    show()
    chat.session = session_id
    for _, m in ipairs(result.messages or {}) do
      if m.kind == "message" and m.role == "user" then
        new_block("\n## You\n\n" .. (m.content or "") .. "\n")
        -- What AgentLS told the model first (a rejected edit…): a note, not the person's words.
        for _, note in ipairs(m.notes or {}) do
          new_block("_AgentLS note: " .. note .. "_\n", "AgentlsChatNote")
        end
      elseif m.kind == "message" and m.role == "assistant" and m.content and m.content ~= "" then
        new_block("\n## AgentLS\n\n" .. m.content .. "\n")
      end
    end
  end)
end

function M.state()
  return chat
end

return M
