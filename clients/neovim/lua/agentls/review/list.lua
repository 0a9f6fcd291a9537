-- The review list: a small buffer (filetype `agentls-review`) with a line for every file of
-- the review and every hunk, each with its state, kept up to date as the person decides.
local config = require("agentls.config")
local files = require("agentls.review.files")
local hunks = require("agentls.review.hunks")

local M = {}

local shown, ns = hunks.shown, hunks.ns

local function hunk_line(h)
  local state = h.state == "kept" and (h.edited and "kept (edited)" or "kept") or h.state
  local where = h.mark and ("line " .. (hunks.span(h) + 1)) or ""
  return string.format("  change %d  %-10s -%d +%d  %s", h.index, where, #h.old, #h.new, state)
end

local function file_line(f)
  local name = shown(f.path)
  if f.kind == "rename" then
    name = shown(f.old_path) .. " -> " .. name
  end
  local state = files.state(f)
  if f.hunks then
    local kept = hunks.count(f)
    return string.format(
      "%s (%s): %d change%s, %s",
      name,
      files.KIND[f.kind],
      #f.hunks,
      #f.hunks == 1 and "" or "s",
      state == "pending" and "pending" or string.format("%d kept", kept)
    )
  end
  local kind = files.KIND[f.kind]
  if f.kind == "delete" then
    local n = #hunks.split_text(f.old or "")
    kind = string.format("deleted, %d line%s", n, n == 1 and "" or "s")
  end
  return string.format("%s (%s): %s", name, kind, state)
end

local function help_line()
  local k = config.options.review_keys
  local function key(name)
    return k[name] or "-"
  end
  return string.format(
    "%s keep  %s reject  %s/%s next/prev  %s keep all  %s reject all  <CR> go",
    key("accept"),
    key("reject"),
    key("next"),
    key("prev"),
    key("accept_all"),
    key("reject_all")
  )
end

--- The list's lines; each file and hunk learns its row, `review.rows` maps rows to items.
local function render(review)
  local label = review.label or "AgentLS: edit"
  local lines = { (label:find("^AgentLS") and label or ("AgentLS: " .. label)) .. " (review)", help_line() }
  review.rows = {}
  for _, f in ipairs(review.files) do
    table.insert(lines, file_line(f))
    f.row = #lines
    review.rows[#lines] = { file = f }
    for _, h in ipairs(f.hunks or {}) do
      table.insert(lines, hunk_line(h))
      h.row = #lines
      review.rows[#lines] = { file = f, hunk = h }
    end
  end
  return lines
end

local function set_lines(review, first, last, lines)
  vim.bo[review.list].modifiable = true
  vim.api.nvim_buf_set_lines(review.list, first, last, false, lines)
  vim.bo[review.list].modifiable = false
end

--- Whether the review's list is open.
function M.is_open(review)
  return review.list ~= nil and vim.api.nvim_buf_is_valid(review.list)
end

--- The list's lines for `item` (and its file) after a decision.
function M.refresh(review, item)
  if not M.is_open(review) then
    return
  end
  local f = item.file
  set_lines(review, f.row - 1, f.row, { file_line(f) })
  if item.hunk then
    set_lines(review, item.hunk.row - 1, item.hunk.row, { hunk_line(item.hunk) })
  elseif f.hunks then
    for _, h in ipairs(f.hunks) do
      set_lines(review, h.row - 1, h.row, { hunk_line(h) })
    end
  end
end

--- Every line of the list again (after many decisions at once).
function M.redraw(review)
  if M.is_open(review) then
    set_lines(review, 2, -1, vim.list_slice(render(review), 3))
  end
end

--- Open the list in a split at the bottom; the cursor stays where it was.
function M.open(review)
  local bufnr = vim.api.nvim_create_buf(false, true)
  vim.bo[bufnr].bufhidden = "wipe"
  pcall(vim.api.nvim_buf_set_name, bufnr, "agentls://review")
  review.list = bufnr
  set_lines(review, 0, -1, render(review))
  vim.bo[bufnr].filetype = "agentls-review"
  vim.api.nvim_buf_set_extmark(bufnr, ns, 0, 0, { line_hl_group = "AgentlsFileHeader" })
  vim.api.nvim_buf_set_extmark(bufnr, ns, 1, 0, { line_hl_group = "Comment" })
  for _, f in ipairs(review.files) do
    if f.kind == "delete" then -- what would go, under its line (the first lines)
      local old = hunks.split_text(f.old or "")
      local shown_lines = vim.list_slice(old, 1, 5)
      if #old > 5 then
        table.insert(shown_lines, string.format("… %d more lines", #old - 5))
      end
      local virt = {}
      for _, line in ipairs(shown_lines) do
        table.insert(virt, { { "    -" .. hunks.expand_tabs(line, bufnr), "AgentlsReviewDelete" } })
      end
      vim.api.nvim_buf_set_extmark(bufnr, ns, f.row - 1, 0, { virt_lines = virt })
    end
  end
  local cur = vim.api.nvim_get_current_win()
  vim.cmd(string.format("botright %dsplit", math.min(#vim.api.nvim_buf_get_lines(bufnr, 0, -1, false), 10)))
  local win = vim.api.nvim_get_current_win()
  vim.api.nvim_win_set_buf(win, bufnr)
  vim.wo[win].number, vim.wo[win].relativenumber, vim.wo[win].wrap = false, false, false
  vim.wo[win].winfixheight = true
  vim.api.nvim_set_current_win(cur)
end

return M
