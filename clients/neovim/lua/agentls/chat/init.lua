-- The chat buffer (`:help agentls-chat`): a plain markdown buffer (buftype=nofile) the person
-- can edit, yank and search. The transcript streams in from agentls/chatEvent; tool calls
-- are folded lines; the prompt area under the separator at the bottom is sent with
-- keymaps.send. Mentions typed there (#buffer, #file:…, @symbol …) go along as references
-- the server resolves (mentions.lua); a reopened session is rendered from the server's
-- display-ready history (agentls/turns), the same way a live turn is.
-- This module is the public API; the parts: chat/state.lua (the one chat's state),
-- chat/transcript.lua (writing into the buffer), chat/render.lua (what a turn looks like),
-- chat/window.lua (the buffer, its keys and window), chat/winbar.lua (model and mode shown),
-- chat/turn.lua (sending, streaming, cancelling), chat/history.lua (sessions and their
-- history), chat/picker.lua (:AgentModel, :AgentMode).
local chat = require("agentls.chat.state")
local history = require("agentls.chat.history")
local picker = require("agentls.chat.picker")
local transcript = require("agentls.chat.transcript")
local turn = require("agentls.chat.turn")
local window = require("agentls.chat.window")
local winbar = require("agentls.chat.winbar")

local M = {}

M.close = window.close
M.send = turn.send
M.send_prompt_area = turn.send_prompt_area
M.ask = turn.ask
M.cancel = turn.cancel
M.on_event = turn.on_event
M.sessions = history.sessions
M.open_session = history.open_session
M.more = history.more
M.reopen = history.reopen
M.pick_model = picker.pick_model
M.probed_models = picker.probed_models
M.pick_mode = picker.pick_mode
M.statusline = winbar.statusline

--- :AgentChat [prompt]: with a prompt, send it; without, toggle the chat: open it, go to
--- it, or (when the cursor is in it) close it.
function M.open(prompt)
  if prompt and prompt ~= "" then
    window.show()
    M.send(prompt)
    return
  end
  local wins = transcript.windows()
  local current = vim.api.nvim_get_current_win()
  if vim.tbl_contains(wins, current) then
    M.close()
    return
  end
  local win = window.show()
  vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(chat.bufnr), 0 })
end

function M.state()
  return chat
end

return M
