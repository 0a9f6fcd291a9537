-- Writing the transcript: text streamed onto its last line, blocks started after a blank
-- line, all above the prompt separator, with the chat's windows following the end.
local chat = require("agentls.chat.state")

local M = {}

M.ns = vim.api.nvim_create_namespace("agentls_chat")
local ns = M.ns

function M.valid()
  return chat.bufnr and vim.api.nvim_buf_is_valid(chat.bufnr)
end

function M.windows()
  return M.valid() and vim.fn.win_findbuf(chat.bufnr) or {}
end

--- The line of the prompt separator (0-based): the last line that is exactly it.
function M.separator_row()
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
  for _, win in ipairs(M.windows()) do
    if vim.api.nvim_get_current_win() ~= win then
      vim.api.nvim_win_set_cursor(win, { M.separator_row(), 0 })
    end
  end
end

--- Append `text` to the transcript (above the prompt area), continuing its last line.
function M.append(text, hl)
  if not M.valid() then
    return
  end
  local row = M.separator_row()
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
--- A reopened session is built the same way (render.add_block), so both read alike.
function M.block(lines, hl)
  if not M.valid() then
    return
  end
  local row = M.separator_row()
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

function M.new_block(text, hl)
  M.block(vim.split(vim.trim(text), "\n", { plain = true }), hl)
end

--- The text the person typed under the separator.
function M.prompt_area()
  local row = M.separator_row()
  local lines = vim.api.nvim_buf_get_lines(chat.bufnr, row + 1, -1, false)
  return vim.trim(table.concat(lines, "\n"))
end

return M
