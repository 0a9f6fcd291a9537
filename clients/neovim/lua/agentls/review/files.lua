-- The files of a review: their buffers loaded and the proposed text put in (an update's
-- hunks, a created file's scratch buffer), each file's state, the decisions on created,
-- deleted and renamed files, what is written at the end, and the summary of what was kept.
local config = require("agentls.config")
local hunks = require("agentls.review.hunks")
local util = vim.lsp.util

local M = {}

local shown = hunks.shown

M.KIND = { create = "created", delete = "deleted", rename = "renamed", update = "changed" }

--- A file's buffer, loaded. A file not loaded yet is read without autocommands (its
--- filetype, syntax and plugins cost up to tens of ms each, for every file of a big edit):
--- the AgentLS client is attached at once, the filetype set when a window first shows it.
function M.load(path, client)
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
function M.prepare_update(f)
  local bufnr = M.load(f.path)
  f.bufnr = bufnr
  f.modified_before = vim.bo[bufnr].modified
  local old = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  f.old_lines, f.old_eol = old, vim.bo[bufnr].eol
  local new_eol = f.new == "" or f.new:sub(-1) == "\n"
  if vim.bo[bufnr].eol ~= new_eol then -- the final newline goes with the text, kept as sent
    vim.bo[bufnr].eol = new_eol
  end
  if not new_eol then -- written as it is: no final newline added ('fixeol')
    vim.bo[bufnr].fixeol = false
  end
  hunks.propose(f, old, hunks.split_text(f.new))
end

--- Created files: a scratch buffer holding the new text, every line added.
function M.prepare_create(f)
  local text = f.exact or f.new
  local bufnr = vim.api.nvim_create_buf(false, true)
  vim.bo[bufnr].bufhidden = "hide"
  pcall(vim.api.nvim_buf_set_name, bufnr, "agentls://new/" .. shown(f.path))
  vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, hunks.split_text(text))
  local ft = vim.filetype.match({ filename = f.path, buf = bufnr })
  if ft then
    vim.bo[bufnr].filetype = ft
  end
  vim.bo[bufnr].modifiable = false
  f.bufnr, f.scratch = bufnr, true
  for row = 0, vim.api.nvim_buf_line_count(bufnr) - 1 do
    hunks.mark_added(bufnr, row)
  end
end

--- "pending", "kept", "rejected", "partial" (some hunks kept) or "failed".
function M.state(f)
  if not f.hunks then
    return f.state
  end
  local kept, pending = hunks.count(f)
  if pending > 0 then
    return "pending"
  end
  return kept == #f.hunks and "kept" or (kept == 0 and "rejected" or "partial")
end

--- Create / delete / rename, done when accepted (with `review`'s edit, encoding and client).
function M.accept(review, f)
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
      f.bufnr = M.load(f.path, review.client)
      for _, win in ipairs(vim.fn.win_findbuf(scratch)) do
        vim.api.nvim_win_set_buf(win, f.bufnr)
      end
      vim.api.nvim_buf_delete(scratch, { force = true })
      f.scratch = false
    end
  else
    ok, err = pcall(util.apply_workspace_edit, { documentChanges = changes_of(review.edit, f) }, review.encoding)
  end
  if not ok then
    -- Told once, with the others, when the review ends (M.ending); the reason in the list.
    f.state, f.reason = "failed", (tostring(err):gsub("%s+", " "))
    return true
  end
  f.state = "kept"
  return true
end

function M.reject(f)
  if f.state == "pending" then
    f.state = "rejected"
    if f.scratch and vim.api.nvim_buf_is_valid(f.bufnr) then
      vim.api.nvim_buf_delete(f.bufnr, { force = true })
    end
  end
  return true
end

--- Write what was kept (buffers that had no unsaved changes before); a file deleted on disk
--- during the review is not written back, and counts as not kept.
function M.settle(f)
  if not f.hunks or not vim.api.nvim_buf_is_valid(f.bufnr) then
    return
  end
  local kept = M.state(f) ~= "rejected"
  if kept and not vim.uv.fs_stat(f.path) then
    -- Nothing of it landed: the buffer shows the text it had, as the review found it.
    f.reason, f.deleted = "deleted on disk during the review", true
    for _, h in ipairs(f.hunks) do
      h.state = "rejected"
    end
    vim.api.nvim_buf_call(f.bufnr, function()
      pcall(vim.cmd, "undojoin")
      vim.api.nvim_buf_set_lines(f.bufnr, 0, -1, false, f.old_lines)
    end)
    vim.bo[f.bufnr].eol = f.old_eol
    return -- told once, with the others, when the review ends (M.ending)
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

local MAX_RANGES = 8 -- a longer line would stop the editor at a hit-enter prompt

--- Which of file `f`'s hunks were kept, as ranges: "1-3, 5, 9-2000".
local function kept_ranges(f)
  local ranges, first, last = {}, nil, nil
  local function close()
    if first then
      table.insert(ranges, first == last and tostring(first) or (first .. "-" .. last))
    end
  end
  for _, h in ipairs(f.hunks) do
    if h.state == "kept" then
      if last and h.index == last + 1 then
        last = h.index
      else
        close()
        first, last = h.index, h.index
      end
    end
  end
  close()
  if #ranges > MAX_RANGES then
    local more = #ranges - MAX_RANGES
    ranges = vim.list_slice(ranges, 1, MAX_RANGES)
    table.insert(ranges, string.format("and %d more range%s", more, more == 1 and "" or "s"))
  end
  return table.concat(ranges, ", ")
end

--- Whether every file was kept whole, and each file's outcome ("kept 2 of 3 changes in x");
--- with `detailed`, a failed file's reason too (for the list; the answer to the server
--- stays as it was).
function M.outcomes(files, detailed)
  local parts, all_kept = {}, true
  for _, f in ipairs(files) do
    local state = M.state(f)
    if state ~= "kept" then
      all_kept = false
    end
    if f.hunks then
      local kept = hunks.count(f)
      if kept == #f.hunks then
        table.insert(parts, "kept " .. shown(f.path))
      elseif kept == 0 then
        table.insert(parts, "rejected " .. shown(f.path) .. (f.reason and (" (" .. f.reason .. ")") or ""))
      else
        table.insert(
          parts,
          string.format("kept %d of %d changes in %s (%s)", kept, #f.hunks, shown(f.path), kept_ranges(f))
        )
      end
    else
      local verb = state == "kept" and "kept" or (state == "failed" and "failed" or "rejected")
      local why = (detailed and state == "failed" and f.reason) and (" (" .. f.reason .. ")") or ""
      table.insert(parts, string.format("%s %s %s%s", verb, M.KIND[f.kind], shown(f.path), why))
    end
  end
  return all_kept, parts
end

--- Whether every file was kept whole, and what was kept, said in one line (the answer's
--- failureReason; unbounded in the number of files).
function M.summary(files)
  local all_kept, parts = M.outcomes(files)
  return all_kept, table.concat(parts, "; ")
end

local function plural(n, word)
  return string.format("%d %s%s", n, word, n == 1 and "" or "s")
end

--- The summary as one line of at most `width` display cells, for any number of files: the
--- whole summary when it fits, else counts of files kept, partly kept, rejected and failed
--- (`hint` appended when it fits too), cut with "…" on a screen too narrow for even that.
function M.headline(files, width, hint)
  local _, text = M.summary(files)
  if vim.fn.strdisplaywidth(text) <= width then
    return text
  end
  local n = { kept = 0, partly = 0, rejected = 0, failed = 0 }
  for _, f in ipairs(files) do
    local state = M.state(f)
    if state == "kept" then
      n.kept = n.kept + 1
    elseif state == "failed" then
      n.failed = n.failed + 1
    elseif state == "partial" then
      n.partly = n.partly + 1
    else
      n.rejected = n.rejected + 1
    end
  end
  local parts = {}
  for _, key in ipairs({ "kept", "partly", "rejected", "failed" }) do
    if n[key] > 0 then
      local verb = key == "partly" and "partly kept" or key
      table.insert(parts, #parts == 0 and (verb .. " " .. plural(n[key], "file")) or (verb .. " " .. n[key]))
    end
  end
  local line = table.concat(parts, ", ")
  if hint and vim.fn.strdisplaywidth(line .. hint) <= width then
    return line .. hint
  end
  if vim.fn.strdisplaywidth(line) > width then
    line = vim.fn.strcharpart(line, 0, math.max(width - 1, 0)) .. "…"
  end
  return line
end

local function fits(text, width)
  return vim.fn.strdisplaywidth(text) <= width
end

--- What to tell when a review ends, as one message of at most `width` display cells (a
--- longer one, or one message per file, would stop Neovim at a hit-enter prompt). Without
--- trouble, the headline. Else the files that could not be applied and those deleted on
--- disk during the review, counted ("5 not applied; 30 deleted on disk"), then, as long as
--- it fits, in this order: the first name of each, `hint` (where the details are), the other
--- files' outcome (M.headline), more names ("gone01.txt, gone02.txt, +28 more"); cut with
--- "…" on a screen too narrow even for the counts. Returns the text and its level: ERROR
--- when a file could not be applied, WARN when one was deleted on disk, else INFO.
function M.ending(files, width, hint)
  hint = hint or ""
  local failed, deleted, others = {}, {}, {}
  for _, f in ipairs(files) do
    local name = vim.fn.fnamemodify(f.path, ":t")
    if M.state(f) == "failed" then
      table.insert(failed, name)
    elseif f.deleted then
      table.insert(deleted, name)
    else
      table.insert(others, f)
    end
  end
  local prefix = "review done: "
  if #failed == 0 and #deleted == 0 then
    local room = math.max(width - vim.fn.strdisplaywidth(prefix), 1)
    return prefix .. M.headline(files, room, hint), vim.log.levels.INFO
  end
  local groups = {}
  if #failed > 0 then
    table.insert(groups, { head = #failed .. " not applied", names = failed, shown = 0 })
  end
  if #deleted > 0 then
    table.insert(groups, { head = #deleted .. " deleted on disk", names = deleted, shown = 0 })
  end
  local with = { hint = "", counts = "" }
  local function render()
    local parts = {}
    for _, g in ipairs(groups) do
      local names = vim.list_slice(g.names, 1, g.shown)
      if g.shown > 0 and g.shown < #g.names then
        table.insert(names, string.format("+%d more", #g.names - g.shown))
      end
      table.insert(parts, #names > 0 and (g.head .. " (" .. table.concat(names, ", ") .. ")") or g.head)
    end
    return prefix .. table.concat(parts, "; ") .. with.counts .. with.hint
  end
  local function try(change, undo)
    change()
    if not fits(render(), width) then
      undo()
      return false
    end
    return true
  end
  local function more_names(limit)
    for _, g in ipairs(groups) do
      while g.shown < math.min(#g.names, limit) do
        if
          not try(function()
            g.shown = g.shown + 1
          end, function()
            g.shown = g.shown - 1
          end)
        then
          break
        end
      end
    end
  end
  more_names(1)
  try(function()
    with.hint = hint
  end, function()
    with.hint = ""
  end)
  if #others > 0 then
    local room = width - vim.fn.strdisplaywidth(render() .. "; ")
    local counts = room > 0 and M.headline(others, room) or "…"
    if not vim.endswith(counts, "…") then
      try(function()
        with.counts = "; " .. counts
      end, function()
        with.counts = ""
      end)
    end
  end
  more_names(math.huge)
  local text = render()
  if not fits(text, width) then
    text = vim.fn.strcharpart(text, 0, math.max(width - 1, 0)) .. "…"
  end
  return text, #failed > 0 and vim.log.levels.ERROR or vim.log.levels.WARN
end

return M
