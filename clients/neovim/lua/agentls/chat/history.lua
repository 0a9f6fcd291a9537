-- Sessions and their history: :AgentSessions picks a stored session; it is rendered from the
-- server's display-ready turns (agentls/turns), the latest page first, with an "earlier
-- turns" line that shows the page before on <CR>.
local chat = require("agentls.chat.state")
local render = require("agentls.chat.render")
local transcript = require("agentls.chat.transcript")
local window = require("agentls.chat.window")
local winbar = require("agentls.chat.winbar")

local M = {}

local ns = transcript.ns
local HISTORY_TURNS = 100 -- turns a reopened session shows at first (the latest ones)
local MORE = "_(%d earlier turns: <CR> on this line shows %d more)_"

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

local function more_line(start)
  return string.format(MORE, start, math.min(start, HISTORY_TURNS))
end

--- Render a page of agentls/turns into a fresh chat buffer; returns the number of turns.
local function render_history(page)
  chat.run, chat.cancelled = nil, nil
  local last = page.turns and page.turns[#page.turns]
  chat.model = last and last.model or chat.model
  chat.mode = last and last.mode or chat.mode
  window.show() -- the chat buffer is reused: its window, folds and keys stay
  vim.api.nvim_buf_clear_namespace(chat.bufnr, ns, 0, -1)
  chat.history_start = page.hasMore and page.start or nil
  local out = { "# AgentLS chat" }
  local tool_rows = {}
  if page.hasMore then
    table.insert(out, more_line(page.start))
  end
  for _, turn in ipairs(page.turns or {}) do
    render.turn_lines(turn, out, tool_rows)
  end
  table.insert(out, chat.separator)
  table.insert(out, "")
  -- Folds (markers) and undo are not worked out line by line while the page goes in.
  local wins = transcript.windows()
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
  winbar.update()
  for _, win in ipairs(transcript.windows()) do
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
  if not transcript.valid() or not start or not chat.session then
    return
  end
  local params = { sessionId = chat.session, before = start, limit = HISTORY_TURNS }
  require("agentls").request("agentls/turns", params, function(err, page)
    if err or not transcript.valid() then
      vim.notify("AgentLS: " .. (err and err.message or "the chat is gone"), vim.log.levels.ERROR)
      return
    end
    local out, tool_rows = {}, {}
    for _, turn in ipairs(page.turns or {}) do
      render.turn_lines(turn, out, tool_rows)
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

return M
