-- The hunks of a reviewed buffer: the line diff between the old and the proposed text, each
-- hunk drawn with extmarks (added lines highlighted with `+` signs, removed lines as virtual
-- lines above them), found again after the person edited around it, and kept or rejected.
local config = require("agentls.config")

local M = {}

M.ns = vim.api.nvim_create_namespace("agentls_review")
local ns = M.ns
local diff = (vim.text and vim.text.diff) or vim.diff

--- A path as the person reads it (relative to the working directory or home).
function M.shown(path)
  return vim.fn.fnamemodify(path, ":~:.")
end

--- Text as lines; a final newline does not make an empty last line.
function M.split_text(text)
  local lines = vim.split(text, "\n", { plain = true })
  if text:sub(-1) == "\n" then
    table.remove(lines)
  end
  return lines
end

--- Line hunks turning `old` into `new` (lists of lines): { a, a_count, b, b_count } 1-based.
function M.line_hunks(old, new)
  local a = table.concat(old, "\n") .. "\n"
  local b = table.concat(new, "\n") .. "\n"
  return diff(a, b, { result_type = "indices" })
end

function M.expand_tabs(line, bufnr)
  return (line:gsub("\t", string.rep(" ", vim.bo[bufnr].tabstop)))
end

--- The removed lines as virtual lines, padded so the band spans the window.
local function virt_lines(lines, bufnr)
  local out = {}
  local width = vim.o.columns
  for _, line in ipairs(lines) do
    local text = M.expand_tabs(line, bufnr)
    local pad = width - vim.fn.strdisplaywidth(text)
    table.insert(out, { { text .. string.rep(" ", math.max(pad, 0)), "AgentlsReviewDelete" } })
  end
  return out
end

local ADDED = { line_hl_group = "AgentlsReviewAdd", sign_text = "+", sign_hl_group = "AgentlsReviewSignAdd" }

--- Mark `row` (0-based) of `bufnr` as an added line; returns the extmark's id.
function M.mark_added(bufnr, row, priority)
  return vim.api.nvim_buf_set_extmark(bufnr, ns, row, 0, vim.tbl_extend("force", ADDED, { priority = priority }))
end

--- Draw one pending hunk whose proposed lines start at `row` (0-based).
function M.draw(h, row)
  local bufnr = h.file.bufnr
  local count = #h.new
  local opts = { priority = 200 }
  if count > 0 then
    local last = vim.api.nvim_buf_get_lines(bufnr, row + count - 1, row + count, false)[1] or ""
    opts.end_row, opts.end_col = row + count - 1, #last
    opts.end_right_gravity = true
    if #h.old > 0 then
      opts.virt_lines, opts.virt_lines_above = virt_lines(h.old, bufnr), true
    end
    h.mark = vim.api.nvim_buf_set_extmark(bufnr, ns, row, 0, opts)
    h.lines = {}
    for i = 0, count - 1 do
      table.insert(h.lines, M.mark_added(bufnr, row + i, 200))
    end
  else
    -- Only removed lines: shown above the line that follows them (below the last line).
    local n = vim.api.nvim_buf_line_count(bufnr)
    local above = row < n
    h.mark = vim.api.nvim_buf_set_extmark(bufnr, ns, above and row or n - 1, 0, {
      virt_lines = virt_lines(h.old, bufnr),
      virt_lines_above = above,
      sign_text = "-",
      sign_hl_group = "AgentlsReviewSignDelete",
      priority = 200,
    })
    h.below = not above
    h.lines = {}
  end
end

local function undraw(h)
  for _, id in ipairs(h.lines or {}) do
    vim.api.nvim_buf_del_extmark(h.file.bufnr, ns, id)
  end
  if h.mark then
    vim.api.nvim_buf_del_extmark(h.file.bufnr, ns, h.mark)
  end
  h.lines, h.mark = {}, nil
end

--- Where the hunk's proposed lines are now: first row, rows after the last (0-based).
function M.span(h)
  local pos = vim.api.nvim_buf_get_extmark_by_id(h.file.bufnr, ns, h.mark, { details = true })
  local row, details = pos[1], pos[3]
  if #h.new == 0 then
    return h.below and row + 1 or row, h.below and row + 1 or row
  end
  return row, (details and details.end_row or row) + 1
end

--- Put the proposed text of file `f` (its buffer `f.bufnr` holding `old`, a list of lines)
--- into the buffer, one hunk at a time, and draw every hunk: `f.hunks`, top to bottom.
function M.propose(f, old, new)
  local bufnr = f.bufnr
  f.hunks = {}
  local hunks = M.line_hunks(old, new)
  -- Bottom to top, so the rows of the hunks above stay where the diff says.
  for i = #hunks, 1, -1 do
    local a, a_count, b, b_count = unpack(hunks[i])
    local a0 = a_count == 0 and a or a - 1
    local h = {
      file = f,
      old = vim.list_slice(old, a0 + 1, a0 + a_count),
      new = vim.list_slice(new, (b_count == 0 and b or b - 1) + 1, (b_count == 0 and b or b - 1) + b_count),
      state = "pending",
    }
    vim.api.nvim_buf_set_lines(bufnr, a0, a0 + a_count, false, h.new)
    f.hunks[i] = h
  end
  for i, h in ipairs(f.hunks) do
    local _, _, b, b_count = unpack(hunks[i])
    h.index = i
    M.draw(h, b_count == 0 and b or b - 1)
  end
end

--- Decide a pending hunk. Kept: its text stays as it is now (edited by the person or not).
--- Rejected: its old lines come back, joined to the review's undo step; a hunk the person
--- edited meanwhile is refused, since putting the old lines back would drop their edit.
--- Returns true, or false and why.
function M.decide(h, keep)
  if h.state ~= "pending" then
    return true
  end
  local first, after = M.span(h)
  local now = vim.api.nvim_buf_get_lines(h.file.bufnr, first, after, false)
  local edited = not vim.deep_equal(now, h.new)
  if keep then
    h.edited = edited
  elseif edited then
    return false,
      string.format(
        "change %d in %s was edited during the review, so it was not undone: undo your edit, or keep it (%s)",
        h.index,
        M.shown(h.file.path),
        config.options.review_keys.accept or ":AgentReview accept"
      )
  else
    vim.api.nvim_buf_call(h.file.bufnr, function()
      pcall(vim.cmd, "undojoin") -- one undo step from the old text to what was kept
      vim.api.nvim_buf_set_lines(h.file.bufnr, first, after, false, h.old)
    end)
  end
  undraw(h)
  h.state = keep and "kept" or "rejected"
  return true
end

--- How many of file `f`'s hunks are kept, and how many pending.
function M.count(f)
  local pending, kept = 0, 0
  for _, h in ipairs(f.hunks) do
    if h.state == "pending" then
      pending = pending + 1
    elseif h.state == "kept" then
      kept = kept + 1
    end
  end
  return kept, pending
end

return M
