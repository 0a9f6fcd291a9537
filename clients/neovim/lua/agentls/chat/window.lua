-- The chat buffer and its window: a plain markdown buffer (buftype=nofile) with the prompt
-- separator and the chat's keys, shown in a split, a vsplit or a tab (chat.layout).
local chat = require("agentls.chat.state")
local config = require("agentls.config")
local transcript = require("agentls.chat.transcript")
local winbar = require("agentls.chat.winbar")

local M = {}

local SEPARATOR = "──── prompt (%s send, %s cancel) ────"

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
  -- The actions live in the modules above this one (turn.lua, history.lua), reached on use.
  if keys.send then
    vim.keymap.set({ "n", "i" }, keys.send, function()
      require("agentls.chat").send_prompt_area()
    end, { buffer = bufnr, desc = "AgentLS: send the prompt" })
  end
  if keys.cancel then
    vim.keymap.set({ "n", "i" }, keys.cancel, function()
      require("agentls.chat").cancel()
    end, { buffer = bufnr, desc = "AgentLS: cancel the turn" })
  end
  vim.keymap.set("n", "q", M.close, { buffer = bufnr, desc = "AgentLS: close the chat" })
  vim.keymap.set("n", "<CR>", function()
    if chat.history_start and vim.api.nvim_get_current_line():match("^_%(%d+ earlier turns") then
      vim.schedule(require("agentls.chat").more)
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
function M.remember_source()
  local current = vim.api.nvim_get_current_buf()
  if current ~= chat.bufnr and vim.bo[current].buftype == "" then
    chat.source = current
  end
end

--- Show the chat (open its window if none) and go to it; returns its window.
function M.show()
  M.remember_source()
  if not transcript.valid() then
    setup_buffer()
  end
  local wins = transcript.windows()
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
  winbar.update()
  winbar.fetch_options()
  return win
end

--- Close the chat's windows (the buffer, its session and a running turn stay).
function M.close()
  for _, win in ipairs(transcript.windows()) do
    if #vim.api.nvim_list_wins() > 1 then
      vim.api.nvim_win_close(win, false)
    else
      vim.cmd("enew") -- the last window: leave it, on an empty buffer
    end
  end
end

return M
