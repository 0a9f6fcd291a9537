-- Where the person is in a review: the pending changes in order, the one under the cursor
-- (in a reviewed buffer or the review list), going to one, and the next / previous one.
local hunks = require("agentls.review.hunks")

local M = {}

local span = hunks.span

--- Every pending item of `review` ({ file, hunk? }), files in order, hunks top to bottom.
function M.pending(review)
  local out = {}
  for _, f in ipairs(review.files) do
    if f.hunks then
      for _, h in ipairs(f.hunks) do
        if h.state == "pending" then
          table.insert(out, { file = f, hunk = h })
        end
      end
    elseif f.state == "pending" then
      table.insert(out, { file = f })
    end
  end
  return out
end

local function file_of_buf(review, bufnr)
  for _, f in ipairs(review.files) do
    if f.bufnr == bufnr then
      return f
    end
  end
end

--- The item the keys act on: the list's line, else the hunk under (or after) the cursor.
function M.here(review)
  local bufnr = vim.api.nvim_get_current_buf()
  local row = vim.api.nvim_win_get_cursor(0)[1] - 1
  if bufnr == review.list then
    return review.rows[row + 1]
  end
  local f = file_of_buf(review, bufnr)
  if not f then
    return nil
  end
  if not f.hunks then
    return f.state == "pending" and { file = f } or nil
  end
  local before
  for _, h in ipairs(f.hunks) do
    if h.state == "pending" then
      local first, after = span(h)
      if row < math.max(after, first + 1) then
        return { file = f, hunk = h }
      end
      before = h
    end
  end
  return before and { file = f, hunk = before } or nil
end

--- A window for a reviewed buffer: one showing it, else the window the person was in
--- (not the list, the chat or a float), else a new split.
local function window_for(review, bufnr)
  local wins = vim.fn.win_findbuf(bufnr)
  if #wins > 0 then
    return wins[1]
  end
  local chat = require("agentls.chat").state().bufnr
  local function usable(win)
    local b = vim.api.nvim_win_get_buf(win)
    return vim.api.nvim_win_get_config(win).relative == "" and b ~= review.list and b ~= chat
  end
  local cur = vim.api.nvim_get_current_win()
  if usable(cur) then
    return cur
  end
  local prev = vim.fn.win_getid(vim.fn.winnr("#"))
  if prev ~= 0 and usable(prev) then
    return prev
  end
  for _, win in ipairs(vim.api.nvim_tabpage_list_wins(0)) do
    if usable(win) then
      return win
    end
  end
  vim.cmd("aboveleft split")
  return vim.api.nvim_get_current_win()
end

--- Put the cursor on `item` (its hunk in its buffer, or its line in the list).
function M.go(review, item)
  if not item then
    return
  end
  local bufnr = item.file.bufnr
  if not bufnr or not vim.api.nvim_buf_is_valid(bufnr) then
    if review.list and vim.api.nvim_buf_is_valid(review.list) then
      local win = vim.fn.win_findbuf(review.list)[1]
      if win then
        vim.api.nvim_set_current_win(win)
        vim.api.nvim_win_set_cursor(win, { item.file.row, 0 })
      end
    end
    return
  end
  local win = window_for(review, bufnr)
  vim.api.nvim_set_current_win(win)
  if vim.api.nvim_win_get_buf(win) ~= bufnr then
    vim.api.nvim_win_set_buf(win, bufnr)
  end
  local row = item.hunk and span(item.hunk) or 0
  row = math.min(row, vim.api.nvim_buf_line_count(bufnr) - 1)
  vim.api.nvim_win_set_cursor(win, { row + 1, 0 })
end

--- Next (dir 1) or previous (-1) pending item from where the cursor is, wrapping.
function M.step(review, dir)
  local items = M.pending(review)
  if #items == 0 then
    return nil
  end
  local bufnr = vim.api.nvim_get_current_buf()
  local row = vim.api.nvim_win_get_cursor(0)[1] - 1
  local here = file_of_buf(review, bufnr)
  local order = {}
  for i, f in ipairs(review.files) do
    order[f] = i
  end
  local function key(item)
    return order[item.file] * 1e9 + (item.hunk and span(item.hunk) or 0)
  end
  local now = here and (order[here] * 1e9 + row) or (dir > 0 and -1 or math.huge)
  if bufnr == review.list and review.rows[row + 1] then
    now = key(review.rows[row + 1])
  end
  if dir > 0 then
    for _, item in ipairs(items) do
      if key(item) > now then
        return item
      end
    end
    return items[1]
  end
  for i = #items, 1, -1 do
    if key(items[i]) < now then
      return items[i]
    end
  end
  return items[#items]
end

return M
