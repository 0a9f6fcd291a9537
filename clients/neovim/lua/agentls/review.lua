-- The review in the buffer (`:help agentls-review`): an AgentLS workspace/applyEdit is drawn
-- in the real buffers (the proposed text in place, added lines highlighted with `+` signs,
-- removed lines as virtual lines above them) and decided hunk by hunk; created, deleted and
-- renamed files are decided in the review list. The answer is the truth: applied = true
-- only when everything was kept; otherwise applied = false with a reason naming what was
-- kept, and the buffers' text (flushed to the server before the answer) says exactly which
-- hunks landed.
local config = require("agentls.config")
local util = vim.lsp.util

local M = {}

local ns = vim.api.nvim_create_namespace("agentls_review")
local diff = (vim.text and vim.text.diff) or vim.diff
local active = nil -- the open review (one at a time)

local KIND = { create = "created", delete = "deleted", rename = "renamed", update = "changed" }

local function shown(path)
  return vim.fn.fnamemodify(path, ":~:.")
end

local function notify(message, level)
  require("agentls").notify("AgentLS: " .. message, level)
end

local function split_text(text)
  local lines = vim.split(text, "\n", { plain = true })
  if text:sub(-1) == "\n" then
    table.remove(lines)
  end
  return lines
end

-- --- hunks --------------------------------------------------------------------------------

--- Line hunks turning `old` into `new` (lists of lines): { a, a_count, b, b_count } 1-based.
local function line_hunks(old, new)
  local a = table.concat(old, "\n") .. "\n"
  local b = table.concat(new, "\n") .. "\n"
  return diff(a, b, { result_type = "indices" })
end

local function expand_tabs(line, bufnr)
  return (line:gsub("\t", string.rep(" ", vim.bo[bufnr].tabstop)))
end

--- The removed lines as virtual lines, padded so the band spans the window.
local function virt_lines(lines, bufnr)
  local out = {}
  local width = vim.o.columns
  for _, line in ipairs(lines) do
    local text = expand_tabs(line, bufnr)
    local pad = width - vim.fn.strdisplaywidth(text)
    table.insert(out, { { text .. string.rep(" ", math.max(pad, 0)), "AgentlsReviewDelete" } })
  end
  return out
end

--- Draw one pending hunk whose proposed lines start at `row` (0-based).
local function draw(h, row)
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
      table.insert(
        h.lines,
        vim.api.nvim_buf_set_extmark(bufnr, ns, row + i, 0, {
          line_hl_group = "AgentlsReviewAdd",
          sign_text = "+",
          sign_hl_group = "AgentlsReviewSignAdd",
          priority = 200,
        })
      )
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
local function span(h)
  local pos = vim.api.nvim_buf_get_extmark_by_id(h.file.bufnr, ns, h.mark, { details = true })
  local row, details = pos[1], pos[3]
  if #h.new == 0 then
    return h.below and row + 1 or row, h.below and row + 1 or row
  end
  return row, (details and details.end_row or row) + 1
end

local function current_lines(h)
  local first, after = span(h)
  return vim.api.nvim_buf_get_lines(h.file.bufnr, first, after, false), first, after
end

-- --- preparing a review -----------------------------------------------------------------------

--- A file's buffer, loaded. A file not loaded yet is read without autocommands (its
--- filetype, syntax and plugins cost up to tens of ms each, for every file of a big edit):
--- the AgentLS client is attached at once, the filetype set when a window first shows it.
local function load(path, client)
  local bufnr = vim.fn.bufadd(path)
  if vim.api.nvim_buf_is_loaded(bufnr) then
    return bufnr
  end
  local ignore = vim.o.eventignore
  vim.o.eventignore = "all"
  local ok, err = pcall(vim.fn.bufload, bufnr)
  vim.o.eventignore = ignore
  if not ok then
    error(err, 0)
  end
  vim.bo[bufnr].buflisted = true
  if client then
    pcall(vim.lsp.buf_attach_client, bufnr, client.id)
  end
  vim.api.nvim_create_autocmd("BufWinEnter", {
    buffer = bufnr,
    once = true,
    callback = function()
      if vim.bo[bufnr].filetype == "" then
        vim.bo[bufnr].filetype = vim.filetype.match({ buf = bufnr }) or ""
      end
    end,
  })
  return bufnr
end

--- The documentChanges entries that concern file `f` (its resource operation and edits).
local function changes_of(edit, f)
  local out = {}
  local mine = { [f.path] = true }
  if f.old_path then
    mine[f.old_path] = true
  end
  for _, change in ipairs(edit.documentChanges or {}) do
    local uri = change.uri or change.newUri or (change.textDocument and change.textDocument.uri)
    if uri and (mine[vim.uri_to_fname(uri)] or (change.oldUri and mine[vim.uri_to_fname(change.oldUri)])) then
      table.insert(out, change)
    end
  end
  return out
end

--- An update: the proposed text goes into the buffer (one undo step) and each hunk is drawn.
local function prepare_update(f)
  local bufnr = load(f.path)
  f.bufnr = bufnr
  f.modified_before = vim.bo[bufnr].modified
  local old = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  f.old_lines, f.old_eol = old, vim.bo[bufnr].eol
  local new = split_text(f.new)
  f.hunks = {}
  local new_eol = f.new == "" or f.new:sub(-1) == "\n"
  if vim.bo[bufnr].eol ~= new_eol then -- the final newline goes with the text, kept as sent
    vim.bo[bufnr].eol = new_eol
  end
  if not new_eol then -- written as it is: no final newline added ('fixeol')
    vim.bo[bufnr].fixeol = false
  end
  local hunks = line_hunks(old, new)
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
    draw(h, b_count == 0 and b or b - 1)
  end
end

--- Created files: a scratch buffer holding the new text, every line added.
local function prepare_create(f)
  local text = f.exact or f.new
  local bufnr = vim.api.nvim_create_buf(false, true)
  vim.bo[bufnr].bufhidden = "hide"
  pcall(vim.api.nvim_buf_set_name, bufnr, "agentls://new/" .. shown(f.path))
  vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, split_text(text))
  local ft = vim.filetype.match({ filename = f.path, buf = bufnr })
  if ft then
    vim.bo[bufnr].filetype = ft
  end
  vim.bo[bufnr].modifiable = false
  f.bufnr, f.scratch = bufnr, true
  for row = 0, vim.api.nvim_buf_line_count(bufnr) - 1 do
    vim.api.nvim_buf_set_extmark(bufnr, ns, row, 0, {
      line_hl_group = "AgentlsReviewAdd",
      sign_text = "+",
      sign_hl_group = "AgentlsReviewSignAdd",
    })
  end
end

-- --- decisions ---------------------------------------------------------------------------------

local finish, refresh

local function file_state(f)
  if not f.hunks then
    return f.state
  end
  local pending, kept = 0, 0
  for _, h in ipairs(f.hunks) do
    if h.state == "pending" then
      pending = pending + 1
    elseif h.state == "kept" then
      kept = kept + 1
    end
  end
  if pending > 0 then
    return "pending"
  end
  return kept == #f.hunks and "kept" or (kept == 0 and "rejected" or "partial")
end

--- Keep a hunk: its text stays as it is now (edited by the person or not).
local function accept_hunk(h)
  if h.state ~= "pending" then
    return true
  end
  local now = current_lines(h)
  h.edited = not vim.deep_equal(now, h.new)
  undraw(h)
  h.state = "kept"
  return true
end

--- Reject a hunk: its old lines come back, joined to the review's undo step. A hunk the
--- person edited meanwhile is refused: putting the old lines back would drop their edit.
local function reject_hunk(h)
  if h.state ~= "pending" then
    return true
  end
  local now, first, after = current_lines(h)
  if not vim.deep_equal(now, h.new) then
    return false,
      string.format(
        "change %d in %s was edited during the review, so it was not undone: undo your edit, or keep it (%s)",
        h.index,
        shown(h.file.path),
        config.options.review_keys.accept or ":AgentReview accept"
      )
  end
  vim.api.nvim_buf_call(h.file.bufnr, function()
    pcall(vim.cmd, "undojoin") -- one undo step from the old text to what was kept
    vim.api.nvim_buf_set_lines(h.file.bufnr, first, after, false, h.old)
  end)
  undraw(h)
  h.state = "rejected"
  return true
end

--- Create / delete / rename: done when accepted.
local function accept_file(f)
  if f.state ~= "pending" then
    return true
  end
  local ok, err
  if f.kind == "create" then
    ok, err = pcall(function()
      vim.fn.mkdir(vim.fn.fnamemodify(f.path, ":h"), "p")
      local out = assert(io.open(f.path, "wb"))
      out:write(f.exact or f.new)
      out:close()
    end)
    if ok and f.scratch and vim.api.nvim_buf_is_valid(f.bufnr) then
      local scratch = f.bufnr
      f.bufnr = load(f.path, active.client)
      for _, win in ipairs(vim.fn.win_findbuf(scratch)) do
        vim.api.nvim_win_set_buf(win, f.bufnr)
      end
      vim.api.nvim_buf_delete(scratch, { force = true })
      f.scratch = false
    end
  else
    ok, err = pcall(util.apply_workspace_edit, { documentChanges = changes_of(active.edit, f) }, active.encoding)
  end
  if not ok then
    f.state, f.reason = "failed", tostring(err)
    notify(string.format("could not apply %s: %s", shown(f.path), f.reason), vim.log.levels.ERROR)
    return true
  end
  f.state = "kept"
  return true
end

local function reject_file(f)
  if f.state == "pending" then
    f.state = "rejected"
    if f.scratch and vim.api.nvim_buf_is_valid(f.bufnr) then
      vim.api.nvim_buf_delete(f.bufnr, { force = true })
    end
  end
  return true
end

local function decide(item, keep)
  local ok, why
  if item.hunk then
    ok, why = (keep and accept_hunk or reject_hunk)(item.hunk)
  else
    ok, why = (keep and accept_file or reject_file)(item.file)
  end
  if not ok then
    notify(why, vim.log.levels.WARN)
  end
  return ok
end

-- --- where the person is -----------------------------------------------------------------

--- Every pending item, files in order, hunks top to bottom.
local function pending_items()
  local out = {}
  for _, f in ipairs(active.files) do
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

local function file_of_buf(bufnr)
  for _, f in ipairs(active.files) do
    if f.bufnr == bufnr then
      return f
    end
  end
end

--- The item the keys act on: the list's line, else the hunk under (or after) the cursor.
local function item_here()
  local bufnr = vim.api.nvim_get_current_buf()
  local row = vim.api.nvim_win_get_cursor(0)[1] - 1
  if bufnr == active.list then
    return active.rows[row + 1]
  end
  local f = file_of_buf(bufnr)
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
local function window_for(bufnr)
  local wins = vim.fn.win_findbuf(bufnr)
  if #wins > 0 then
    return wins[1]
  end
  local chat = require("agentls.chat").state().bufnr
  local function usable(win)
    local b = vim.api.nvim_win_get_buf(win)
    return vim.api.nvim_win_get_config(win).relative == "" and b ~= active.list and b ~= chat
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

local function go(item)
  if not item then
    return
  end
  local bufnr = item.file.bufnr
  if not bufnr or not vim.api.nvim_buf_is_valid(bufnr) then
    if active.list and vim.api.nvim_buf_is_valid(active.list) then
      local win = vim.fn.win_findbuf(active.list)[1]
      if win then
        vim.api.nvim_set_current_win(win)
        vim.api.nvim_win_set_cursor(win, { item.file.row, 0 })
      end
    end
    return
  end
  local win = window_for(bufnr)
  vim.api.nvim_set_current_win(win)
  if vim.api.nvim_win_get_buf(win) ~= bufnr then
    vim.api.nvim_win_set_buf(win, bufnr)
  end
  local row = item.hunk and span(item.hunk) or 0
  row = math.min(row, vim.api.nvim_buf_line_count(bufnr) - 1)
  vim.api.nvim_win_set_cursor(win, { row + 1, 0 })
end

--- Next (dir 1) or previous (-1) pending item from where the cursor is, wrapping.
local function step(dir)
  local items = pending_items()
  if #items == 0 then
    return nil
  end
  local bufnr = vim.api.nvim_get_current_buf()
  local row = vim.api.nvim_win_get_cursor(0)[1] - 1
  local here = file_of_buf(bufnr)
  local order = {}
  for i, f in ipairs(active.files) do
    order[f] = i
  end
  local function key(item)
    return order[item.file] * 1e9 + (item.hunk and span(item.hunk) or 0)
  end
  local now = here and (order[here] * 1e9 + row) or (dir > 0 and -1 or math.huge)
  if bufnr == active.list and active.rows[row + 1] then
    now = key(active.rows[row + 1])
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

-- --- the list -------------------------------------------------------------------------------

local function hunk_line(h)
  local state = h.state == "kept" and (h.edited and "kept (edited)" or "kept") or h.state
  local where = h.mark and ("line " .. (span(h) + 1)) or ""
  return string.format("  change %d  %-10s -%d +%d  %s", h.index, where, #h.old, #h.new, state)
end

local function file_line(f)
  local name = shown(f.path)
  if f.kind == "rename" then
    name = shown(f.old_path) .. " -> " .. name
  end
  local state = file_state(f)
  if f.hunks then
    local kept = 0
    for _, h in ipairs(f.hunks) do
      kept = kept + (h.state == "kept" and 1 or 0)
    end
    return string.format(
      "%s (%s): %d change%s, %s",
      name,
      KIND[f.kind],
      #f.hunks,
      #f.hunks == 1 and "" or "s",
      state == "pending" and "pending" or string.format("%d kept", kept)
    )
  end
  local kind = KIND[f.kind]
  if f.kind == "delete" then
    local n = #split_text(f.old or "")
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

local function render_list()
  local label = active.label or "AgentLS: edit"
  local lines = { (label:find("^AgentLS") and label or ("AgentLS: " .. label)) .. " (review)", help_line() }
  active.rows = {}
  for _, f in ipairs(active.files) do
    table.insert(lines, file_line(f))
    f.row = #lines
    active.rows[#lines] = { file = f }
    for _, h in ipairs(f.hunks or {}) do
      table.insert(lines, hunk_line(h))
      h.row = #lines
      active.rows[#lines] = { file = f, hunk = h }
    end
  end
  return lines
end

local function set_list_lines(first, last, lines)
  vim.bo[active.list].modifiable = true
  vim.api.nvim_buf_set_lines(active.list, first, last, false, lines)
  vim.bo[active.list].modifiable = false
end

--- The list's lines for `item` (and its file) after a decision.
refresh = function(item)
  if not active.list or not vim.api.nvim_buf_is_valid(active.list) then
    return
  end
  local f = item.file
  set_list_lines(f.row - 1, f.row, { file_line(f) })
  if item.hunk then
    set_list_lines(item.hunk.row - 1, item.hunk.row, { hunk_line(item.hunk) })
  elseif f.hunks then
    for _, h in ipairs(f.hunks) do
      set_list_lines(h.row - 1, h.row, { hunk_line(h) })
    end
  end
end

local function open_list()
  local bufnr = vim.api.nvim_create_buf(false, true)
  vim.bo[bufnr].bufhidden = "wipe"
  pcall(vim.api.nvim_buf_set_name, bufnr, "agentls://review")
  active.list = bufnr
  set_list_lines(0, -1, render_list())
  vim.bo[bufnr].filetype = "agentls-review"
  vim.api.nvim_buf_set_extmark(bufnr, ns, 0, 0, { line_hl_group = "AgentlsFileHeader" })
  vim.api.nvim_buf_set_extmark(bufnr, ns, 1, 0, { line_hl_group = "Comment" })
  for _, f in ipairs(active.files) do
    if f.kind == "delete" then -- what would go, under its line (the first lines)
      local old = split_text(f.old or "")
      local shown_lines = vim.list_slice(old, 1, 5)
      if #old > 5 then
        table.insert(shown_lines, string.format("… %d more lines", #old - 5))
      end
      local virt = {}
      for _, line in ipairs(shown_lines) do
        table.insert(virt, { { "    -" .. expand_tabs(line, bufnr), "AgentlsReviewDelete" } })
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

-- --- keys -------------------------------------------------------------------------------------

local ACTIONS -- name -> function, filled below

local function map_keys(bufnr)
  if active.mapped[bufnr] then
    return
  end
  active.mapped[bufnr] = {}
  for name, lhs in pairs(config.options.review_keys) do
    if lhs and ACTIONS[name] then
      local old = vim.api.nvim_buf_call(bufnr, function()
        return vim.fn.maparg(lhs, "n", false, true)
      end)
      active.mapped[bufnr][lhs] = (old and old.buffer == 1) and old or false
      vim.keymap.set("n", lhs, ACTIONS[name], { buffer = bufnr, nowait = true, desc = "AgentLS review: " .. name })
    end
  end
  if bufnr == active.list then
    vim.keymap.set("n", "<CR>", function()
      local row = vim.api.nvim_win_get_cursor(0)[1]
      go(active.rows[row])
    end, { buffer = bufnr, desc = "AgentLS review: go to the change" })
  end
end

local function unmap_keys()
  for bufnr, keys in pairs(active.mapped) do
    if vim.api.nvim_buf_is_valid(bufnr) then
      for lhs, old in pairs(keys) do
        pcall(vim.keymap.del, "n", lhs, { buffer = bufnr })
        if old then
          vim.api.nvim_buf_call(bufnr, function()
            vim.fn.mapset("n", false, old)
          end)
        end
      end
    end
  end
end

local function after_decision(item)
  refresh(item)
  if #pending_items() == 0 then
    finish()
    return
  end
  -- On to the next pending change in this buffer, if any.
  local nxt = step(1)
  if nxt and nxt.file == item.file and item.hunk then
    go(nxt)
  end
end

local function act(keep)
  if not active then
    return
  end
  local item = item_here()
  if not item then
    notify(
      "no pending change here; " .. (config.options.review_keys.next or ":AgentReview next") .. " goes to the next one",
      vim.log.levels.INFO
    )
    return
  end
  local items = { item }
  if not item.hunk and item.file.hunks then -- a file's line in the list: all its hunks
    items = {}
    for _, h in ipairs(item.file.hunks) do
      table.insert(items, { file = item.file, hunk = h })
    end
  end
  for _, it in ipairs(items) do
    decide(it, keep)
    refresh(it)
  end
  after_decision(item)
end

local function all(keep)
  if not active then
    return
  end
  local refused = 0
  for _, item in ipairs(pending_items()) do
    if not decide(item, keep) then
      refused = refused + 1
    end
  end
  if active.list and vim.api.nvim_buf_is_valid(active.list) then
    set_list_lines(2, -1, vim.list_slice(render_list(), 3))
  end
  if #pending_items() == 0 then
    finish()
  end
end

ACTIONS = {
  accept = function()
    act(true)
  end,
  reject = function()
    act(false)
  end,
  next = function()
    go(active and step(1))
  end,
  prev = function()
    go(active and step(-1))
  end,
  accept_all = function()
    all(true)
  end,
  reject_all = function()
    all(false)
  end,
}

-- --- the end of a review --------------------------------------------------------------------

--- Write what was kept (buffers that had no unsaved changes before); a file deleted on disk
--- during the review is not written back, and counts as not kept.
local function settle(f)
  if not f.hunks or not vim.api.nvim_buf_is_valid(f.bufnr) then
    return
  end
  local kept = file_state(f) ~= "rejected"
  if kept and not vim.uv.fs_stat(f.path) then
    -- Nothing of it landed: the buffer shows the text it had, as the review found it.
    f.reason = "deleted on disk during the review"
    for _, h in ipairs(f.hunks) do
      h.state = "rejected"
    end
    vim.api.nvim_buf_call(f.bufnr, function()
      pcall(vim.cmd, "undojoin")
      vim.api.nvim_buf_set_lines(f.bufnr, 0, -1, false, f.old_lines)
    end)
    vim.bo[f.bufnr].eol = f.old_eol
    notify(shown(f.path) .. " was deleted on disk during the review; it was not written again", vim.log.levels.WARN)
    return
  end
  if f.modified_before then
    return
  end
  if not kept then
    vim.bo[f.bufnr].modified = false -- the old text, as on disk
  elseif config.options.preview.write and vim.bo[f.bufnr].modified then
    vim.api.nvim_buf_call(f.bufnr, function()
      vim.cmd("silent keepalt write")
    end)
  end
end

local function summary()
  local parts, all_kept = {}, true
  for _, f in ipairs(active.files) do
    local state = file_state(f)
    if state ~= "kept" then
      all_kept = false
    end
    if f.hunks then
      local kept = 0
      for _, h in ipairs(f.hunks) do
        kept = kept + (h.state == "kept" and 1 or 0)
      end
      if kept == #f.hunks then
        table.insert(parts, "kept " .. shown(f.path))
      elseif kept == 0 then
        table.insert(parts, "rejected " .. shown(f.path) .. (f.reason and (" (" .. f.reason .. ")") or ""))
      else
        local which = {}
        for _, h in ipairs(f.hunks) do
          if h.state == "kept" then
            table.insert(which, tostring(h.index))
          end
        end
        table.insert(
          parts,
          string.format("kept %d of %d changes in %s (%s)", kept, #f.hunks, shown(f.path), table.concat(which, ", "))
        )
      end
    else
      local verb = state == "kept" and "kept" or (state == "failed" and "failed" or "rejected")
      table.insert(parts, string.format("%s %s %s", verb, KIND[f.kind], shown(f.path)))
    end
  end
  return all_kept, table.concat(parts, "; ")
end

finish = function()
  local review = active
  if not review or review.done then
    return
  end
  review.done = true
  for _, f in ipairs(review.files) do
    pcall(settle, f)
    if f.bufnr and vim.api.nvim_buf_is_valid(f.bufnr) then
      vim.api.nvim_buf_clear_namespace(f.bufnr, ns, 0, -1)
    end
  end
  pcall(unmap_keys)
  for _, id in ipairs(review.autocmds) do
    pcall(vim.api.nvim_del_autocmd, id)
  end
  if review.list and vim.api.nvim_buf_is_valid(review.list) then
    vim.api.nvim_buf_delete(review.list, { force = true })
  end
  local all_kept, text = summary()
  review.answer = all_kept and { applied = true } or { applied = false, failureReason = text }
  active = nil
  -- The buffers' text reaches the server before the answer, so it can check what landed.
  if review.client then
    pcall(function()
      require("vim.lsp._changetracking").flush(review.client)
    end)
  end
  notify("review done: " .. text)
  if review.co and coroutine.status(review.co) == "suspended" then
    coroutine.resume(review.co, review.answer)
  end
end

--- A reviewed buffer closed: what was written stays, unsaved proposed text is gone.
local function on_unload(f)
  if not active or active.done or f.scratch then
    return
  end
  local written = not vim.bo[f.bufnr].modified
  for _, h in ipairs(f.hunks or {}) do
    if h.state == "pending" then
      h.state = written and "kept" or "rejected"
    elseif h.state == "kept" and not written then
      h.state = "rejected"
    end
    h.mark, h.lines = nil, {}
  end
  f.reason = written and nil or "its buffer was closed during the review"
  f.modified_before = true -- nothing more to write
  vim.schedule(function()
    if active and not active.done and #pending_items() == 0 then
      finish()
    elseif active and active.list and vim.api.nvim_buf_is_valid(active.list) then
      set_list_lines(2, -1, vim.list_slice(render_list(), 3))
    end
  end)
end

--- Review `edit` in the buffers; yields the request's coroutine until every change is
--- decided and returns the workspace/applyEdit answer.
function M.run(edit, label, encoding, client, files_of)
  if active then
    local busy = shown(active.files[1] and active.files[1].path or "")
    local why = string.format(
      "another AgentLS review is still open (%s); finish it (%s keep all, %s reject all) and ask again",
      busy,
      config.options.review_keys.accept_all or ":AgentReview accept_all",
      config.options.review_keys.reject_all or ":AgentReview reject_all"
    )
    notify(why, vim.log.levels.WARN)
    return { applied = false, failureReason = why }
  end
  -- Load the buffers first, so the proposed text is computed from (and drawn in) them.
  local created = {}
  for _, change in ipairs(edit.documentChanges or {}) do
    if change.kind == "create" then
      created[vim.uri_to_fname(change.uri)] = true
    elseif change.kind == "rename" then
      created[vim.uri_to_fname(change.newUri)] = true
    elseif change.textDocument and not created[vim.uri_to_fname(change.textDocument.uri)] then
      load(vim.uri_to_fname(change.textDocument.uri), client)
    end
  end
  for uri in pairs(edit.changes or {}) do
    load(vim.uri_to_fname(uri), client)
  end
  local files = files_of(edit, encoding)
  local review =
    { files = {}, label = label, edit = edit, encoding = encoding, client = client, mapped = {}, autocmds = {} }
  active = review
  local ok, err = pcall(function()
    for _, f in ipairs(files) do
      if f.kind == "update" and f.old ~= f.new then
        prepare_update(f)
        table.insert(review.files, f)
      elseif f.kind == "create" then
        f.state = "pending"
        prepare_create(f)
        table.insert(review.files, f)
      elseif f.kind == "delete" or f.kind == "rename" then
        f.state = "pending"
        table.insert(review.files, f)
      end
    end
  end)
  if not ok then
    active = nil
    for _, f in ipairs(review.files) do
      if f.bufnr and vim.api.nvim_buf_is_valid(f.bufnr) then
        vim.api.nvim_buf_clear_namespace(f.bufnr, ns, 0, -1)
      end
    end
    return { applied = false, failureReason = "the review could not show the edit: " .. tostring(err) }
  end
  if #review.files == 0 then
    active = nil
    return { applied = true }
  end
  for _, f in ipairs(review.files) do
    if f.bufnr then
      map_keys(f.bufnr)
      if not f.scratch then
        table.insert(
          review.autocmds,
          vim.api.nvim_create_autocmd("BufUnload", {
            buffer = f.bufnr,
            once = true,
            callback = function()
              on_unload(f)
            end,
          })
        )
      end
    end
  end
  local several = #review.files > 1 or review.files[1].kind ~= "update"
  if several then
    open_list()
    map_keys(review.list)
  end
  vim.cmd("stopinsert") -- the review starts in normal mode whatever the mode was
  local first = pending_items()[1]
  go(first)
  if not several then
    local k = config.options.review_keys
    notify(
      string.format(
        "review %s: %s keep, %s reject, %s keep all, %s reject all",
        shown(review.files[1].path),
        k.accept or "-",
        k.reject or "-",
        k.accept_all or "-",
        k.reject_all or "-"
      )
    )
  end
  local co = coroutine.running()
  if co and coroutine.isyieldable() and not review.done then
    review.co = co
    return coroutine.yield()
  end
  if not review.done then -- not inside the client's request: decide everything at once
    local n = vim.fn.confirm("AgentLS: keep this edit?", "&Keep all\n&Reject all", 2)
    all(n == 1)
  end
  return review.answer
end

--- :AgentReview {action}
function M.action(name)
  if not active then
    notify("no review is open", vim.log.levels.WARN)
    return
  end
  if name == nil or name == "" or name == "list" then
    if not active.list or not vim.api.nvim_buf_is_valid(active.list) then
      open_list()
      map_keys(active.list)
    end
    return
  end
  local fn = ACTIONS[name]
  if not fn then
    notify(
      "unknown review action " .. vim.inspect(name) .. "; one of " .. table.concat(vim.tbl_keys(ACTIONS), ", "),
      vim.log.levels.ERROR
    )
    return
  end
  fn()
end

M.action_names = { "accept", "reject", "next", "prev", "accept_all", "reject_all", "list" }

function M.waiting()
  return active ~= nil
end

--- The open review's state, for tests and statuslines: { files = { {path, kind, state,
--- hunks = {state...}} } } or nil.
function M.state()
  if not active then
    return nil
  end
  local out = { files = {} }
  for _, f in ipairs(active.files) do
    local hunks = {}
    for _, h in ipairs(f.hunks or {}) do
      table.insert(hunks, h.state)
    end
    table.insert(out.files, { path = f.path, kind = f.kind, state = file_state(f), hunks = hunks, bufnr = f.bufnr })
  end
  return out
end

return M
