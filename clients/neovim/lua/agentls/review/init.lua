-- The review in the buffer (`:help agentls-review`): an AgentLS workspace/applyEdit is drawn
-- in the real buffers and decided hunk by hunk; created, deleted and renamed files are
-- decided in the review list. This module is the flow: it opens the review, maps its keys,
-- acts on them, and answers the request. The answer is the truth: applied = true only when
-- everything was kept; otherwise applied = false with a reason naming what was kept, and
-- the buffers' text (flushed to the server before the answer) says exactly which hunks
-- landed. The parts: review/hunks.lua (diff and drawing), review/files.lua (the files and
-- what is written), review/list.lua (the review list), review/navigate.lua (moving around).
local config = require("agentls.config")
local files = require("agentls.review.files")
local hunks = require("agentls.review.hunks")
local list = require("agentls.review.list")
local navigate = require("agentls.review.navigate")

local M = {}

local ns, shown = hunks.ns, hunks.shown
local active = nil -- the open review (one at a time)

local function notify(message, level)
  require("agentls").notify("AgentLS: " .. message, level)
end

local finish -- defined below: ends the review and answers the request

--- Keep or reject one item (a hunk, or a created / deleted / renamed file).
local function decide(item, keep)
  local ok, why
  if item.hunk then
    ok, why = hunks.decide(item.hunk, keep)
  elseif keep then
    ok, why = files.accept(active, item.file)
  else
    ok, why = files.reject(item.file)
  end
  if not ok then
    notify(why, vim.log.levels.WARN)
  end
  return ok
end

-- --- keys -------------------------------------------------------------------------------------

local ACTIONS -- name -> function, filled below
local last -- the last review's outcome, { label, lines = { "kept src/a.py", ... } }

local function go(item)
  navigate.go(active, item)
end

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

local function unmap_keys(review)
  for bufnr, keys in pairs(review.mapped) do
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

local function open_list()
  list.open(active)
  map_keys(active.list)
end

local function after_decision(item)
  list.refresh(active, item)
  if #navigate.pending(active) == 0 then
    finish()
    return
  end
  -- On to the next pending change in this buffer, if any.
  local nxt = navigate.step(active, 1)
  if nxt and nxt.file == item.file and item.hunk then
    go(nxt)
  end
end

local function act(keep)
  if not active then
    return
  end
  local item = navigate.here(active)
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
    list.refresh(active, it)
  end
  local review, f = active, item.file
  after_decision(item)
  -- One file decided here: if it could not be applied and the review goes on, say so now
  -- (at the end it is counted in the one closing message).
  if not review.done and f and f.state == "failed" then
    local text = string.format("could not apply %s: %s", shown(f.path), f.reason)
    local width = math.max(vim.v.echospace - vim.fn.strdisplaywidth("AgentLS: "), 2)
    if vim.fn.strdisplaywidth(text) > width then
      text = vim.fn.strcharpart(text, 0, width - 1) .. "…"
    end
    notify(text, vim.log.levels.ERROR)
  end
end

local function all(keep)
  if not active then
    return
  end
  for _, item in ipairs(navigate.pending(active)) do
    decide(item, keep)
  end
  list.redraw(active)
  if #navigate.pending(active) == 0 then
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
    go(active and navigate.step(active, 1))
  end,
  prev = function()
    go(active and navigate.step(active, -1))
  end,
  accept_all = function()
    all(true)
  end,
  reject_all = function()
    all(false)
  end,
}

-- --- the end of a review --------------------------------------------------------------------

finish = function()
  local review = active
  if not review or review.done then
    return
  end
  review.done = true
  for _, f in ipairs(review.files) do
    pcall(files.settle, f)
    if f.bufnr and vim.api.nvim_buf_is_valid(f.bufnr) then
      vim.api.nvim_buf_clear_namespace(f.bufnr, ns, 0, -1)
    end
  end
  pcall(unmap_keys, review)
  for _, id in ipairs(review.autocmds) do
    pcall(vim.api.nvim_del_autocmd, id)
  end
  if review.list and vim.api.nvim_buf_is_valid(review.list) then
    vim.api.nvim_buf_delete(review.list, { force = true })
  end
  local all_kept, text = files.summary(review.files)
  review.answer = all_kept and { applied = true } or { applied = false, failureReason = text }
  active = nil
  -- The buffers' text reaches the server before the answer, so it can check what landed.
  if review.client then
    pcall(function()
      require("vim.lsp._changetracking").flush(review.client)
    end)
  end
  -- One line that fits the screen whatever the number of files: a longer message would stop
  -- Neovim at a hit-enter prompt. Each file's outcome stays in `:AgentReview list`.
  -- The same for the files that could not be applied or were deleted on disk meanwhile: one
  -- message for all of them, their reasons in the list.
  local _, outcomes = files.outcomes(review.files, true)
  last = { label = review.label, lines = outcomes }
  local width = math.max(vim.v.echospace - vim.fn.strdisplaywidth("AgentLS: "), 1)
  notify(files.ending(review.files, width, " (:AgentReview list)"))
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
    if active and not active.done and #navigate.pending(active) == 0 then
      finish()
    elseif active then
      list.redraw(active)
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
      files.load(vim.uri_to_fname(change.textDocument.uri), client)
    end
  end
  for uri in pairs(edit.changes or {}) do
    files.load(vim.uri_to_fname(uri), client)
  end
  local proposed = files_of(edit, encoding)
  local review =
    { files = {}, label = label, edit = edit, encoding = encoding, client = client, mapped = {}, autocmds = {} }
  active = review
  local ok, err = pcall(function()
    for _, f in ipairs(proposed) do
      if f.kind == "update" and f.old ~= f.new then
        files.prepare_update(f)
        table.insert(review.files, f)
      elseif f.kind == "create" then
        f.state = "pending"
        files.prepare_create(f)
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
  end
  vim.cmd("stopinsert") -- the review starts in normal mode whatever the mode was
  go(navigate.pending(review)[1])
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
--- The last review's outcome, a file a line, in a scratch buffer below.
local function show_last()
  vim.cmd("botright new")
  local buf = vim.api.nvim_get_current_buf()
  vim.bo[buf].buftype, vim.bo[buf].bufhidden, vim.bo[buf].swapfile = "nofile", "wipe", false
  vim.api.nvim_buf_set_lines(
    buf,
    0,
    -1,
    false,
    vim.list_extend({ (last.label or "AgentLS: edit") .. " (review done)" }, vim.deepcopy(last.lines))
  )
  vim.bo[buf].modifiable = false
  vim.api.nvim_win_set_height(0, math.min(#last.lines + 1, math.max(math.floor(vim.o.lines / 3), 3)))
end

function M.action(name)
  if not active then
    if last and (name == nil or name == "" or name == "list") then
      show_last()
      return
    end
    notify("no review is open", vim.log.levels.WARN)
    return
  end
  if name == nil or name == "" or name == "list" then
    if not list.is_open(active) then
      open_list()
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
    local states = {}
    for _, h in ipairs(f.hunks or {}) do
      table.insert(states, h.state)
    end
    table.insert(out.files, { path = f.path, kind = f.kind, state = files.state(f), hunks = states, bufnr = f.bufnr })
  end
  return out
end

return M
