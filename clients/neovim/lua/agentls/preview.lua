-- The edit preview: AgentLS's workspace/applyEdit is shown as a unified diff of every file
-- it touches (created / deleted / renamed marked) and applied only when the person says so.
-- The answer is the truth: rejected, stale (the buffer changed since the server made the
-- edit) or failed all answer applied = false with the reason.
local config = require("agentls.config")
local util = vim.lsp.util

local M = {}

local diff = (vim.text and vim.text.diff) or vim.diff
local pending = nil -- the preview waiting for an answer: { decide = fun(choice) }

local function fname(uri)
  return vim.uri_to_fname(uri)
end

local function loaded_buf(path)
  local bufnr = vim.fn.bufnr(path)
  if bufnr ~= -1 and vim.api.nvim_buf_is_loaded(bufnr) then
    return bufnr
  end
end

local function buf_text(bufnr)
  local lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  local text = table.concat(lines, "\n")
  if vim.bo[bufnr].eol and not (#lines == 1 and lines[1] == "") then
    text = text .. "\n"
  end
  return text
end

local function file_text(path)
  local bufnr = loaded_buf(path)
  if bufnr then
    return buf_text(bufnr)
  end
  local f = io.open(path, "rb")
  if not f then
    return ""
  end
  local text = f:read("*a")
  f:close()
  return text
end

local function line_count(text)
  local _, n = text:gsub("\n", "")
  return n + ((text ~= "" and text:sub(-1) ~= "\n") and 1 or 0)
end

--- `old` with the text edits applied, computed on a scratch buffer the way Neovim will.
local function edited(old, edits, encoding)
  local scratch = vim.api.nvim_create_buf(false, true)
  local lines = vim.split(old, "\n", { plain = true })
  if old:sub(-1) == "\n" then
    table.remove(lines)
  end
  vim.api.nvim_buf_set_lines(scratch, 0, -1, false, lines)
  if old ~= "" and old:sub(-1) ~= "\n" then -- no final newline: none is added
    vim.bo[scratch].eol, vim.bo[scratch].fixeol = false, false
  end
  util.apply_text_edits(vim.deepcopy(edits), scratch, encoding)
  local new = buf_text(scratch)
  vim.api.nvim_buf_delete(scratch, { force = true })
  return new
end

--- The files an edit touches: { kind, path, old_path?, old, new, version? }, in order.
function M.files(edit, encoding)
  local files, by_path, created = {}, {}, {}
  local function entry(path, kind)
    local f = by_path[path]
    if not f then
      local old = created[path] and "" or file_text(path)
      f = { kind = kind, path = path, old = old, new = old }
      by_path[path] = f
      table.insert(files, f)
    end
    return f
  end
  local changes = edit.documentChanges
  if not changes then
    changes = {}
    for uri, edits in pairs(edit.changes or {}) do
      table.insert(changes, { textDocument = { uri = uri }, edits = edits })
    end
  end
  for _, change in ipairs(changes) do
    if change.kind == "create" then
      local path = fname(change.uri)
      created[path] = true
      local f = entry(path, "create")
      f.old, f.new, f.kind = "", "", "create"
    elseif change.kind == "delete" then
      local f = entry(fname(change.uri), "delete")
      f.kind, f.new = "delete", ""
    elseif change.kind == "rename" then
      local old_path, new_path = fname(change.oldUri), fname(change.newUri)
      local text = file_text(old_path)
      local f = entry(new_path, "rename")
      f.kind, f.old_path, f.old, f.new = "rename", old_path, text, text
      created[new_path] = true
    else
      local path = fname(change.textDocument.uri)
      local f = entry(path, "update")
      f.version = f.version or change.textDocument.version
      if f.kind == "create" then
        -- Exactly the inserted text: what the agent wrote, byte for byte.
        local parts = {}
        for _, e in ipairs(change.edits) do
          table.insert(parts, e.newText)
        end
        f.new = f.new .. table.concat(parts)
        f.exact = f.new
      else
        f.new = edited(f.new, change.edits, encoding)
      end
    end
  end
  return files
end

--- Why the edit cannot apply as sent (a buffer moved past the version it names), or nil.
function M.stale(edit)
  for _, change in ipairs(edit.documentChanges or {}) do
    local doc = change.textDocument
    -- Version 0 counts: Neovim opens buffers at 0 (its own handler skips the check there).
    if doc and type(doc.version) == "number" then
      local path = fname(doc.uri)
      local bufnr = loaded_buf(path)
      local now = bufnr and util.buf_versions[bufnr]
      if now and now ~= doc.version then
        return string.format(
          "%s changed in the editor since the edit was made (version %d, now %d); nothing was applied",
          vim.fn.fnamemodify(path, ":~:."),
          doc.version,
          now
        )
      end
    end
  end
end

local MARK = { create = "created", delete = "deleted", rename = "renamed", update = "changed" }

--- The preview text: a header per file, then its unified diff.
function M.render(files, label)
  local lines = {
    "# " .. (label or "AgentLS edit"),
    string.format(
      "# %s apply   %s reject   (:AgentApply / :AgentReject)",
      config.options.keymaps.apply,
      config.options.keymaps.reject
    ),
    "",
  }
  for _, f in ipairs(files) do
    local shown = vim.fn.fnamemodify(f.path, ":~:.")
    local header = string.format("diff --agentls %s (%s)", shown, MARK[f.kind])
    if f.kind == "rename" then
      header = string.format("diff --agentls %s -> %s (renamed)", vim.fn.fnamemodify(f.old_path, ":~:."), shown)
    elseif f.kind == "delete" then
      local n = line_count(f.old)
      header = string.format("diff --agentls %s (deleted, %d line%s)", shown, n, n == 1 and "" or "s")
    end
    table.insert(lines, header)
    table.insert(lines, "--- " .. ((f.kind == "create") and "/dev/null" or ("a/" .. shown)))
    table.insert(lines, "+++ " .. ((f.kind == "delete") and "/dev/null" or ("b/" .. shown)))
    local text = diff(f.old, f.new, { result_type = "unified", ctxlen = 3 })
    for _, line in ipairs(vim.split(text, "\n", { plain = true, trimempty = true })) do
      table.insert(lines, line)
    end
    if f.old == f.new and f.kind ~= "delete" then
      table.insert(lines, "(no change to the text)")
    end
    table.insert(lines, "")
  end
  return lines
end

local function open_window(bufnr)
  local layout = config.options.preview.layout
  if layout == "split" then
    vim.cmd("botright split")
    local win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(win, bufnr)
    return win
  end
  local width = math.max(40, math.floor(vim.o.columns * 0.8))
  local height = math.max(5, math.floor((vim.o.lines - vim.o.cmdheight) * 0.7))
  return vim.api.nvim_open_win(bufnr, true, {
    relative = "editor",
    width = width,
    height = height,
    row = math.floor((vim.o.lines - height) / 2) - 1,
    col = math.floor((vim.o.columns - width) / 2),
    border = "rounded",
    title = " AgentLS: apply this edit? ",
    title_pos = "center",
  })
end

--- Show the preview and wait (yielding the handler's coroutine) for apply / reject.
function M.ask(files, label)
  local bufnr = vim.api.nvim_create_buf(false, true)
  vim.bo[bufnr].bufhidden = "wipe"
  vim.api.nvim_buf_set_name(bufnr, "agentls://preview/" .. bufnr)
  vim.api.nvim_buf_set_lines(bufnr, 0, -1, false, M.render(files, label))
  vim.bo[bufnr].modifiable = false
  vim.bo[bufnr].filetype = "diff"
  local win = open_window(bufnr)
  vim.wo[win].wrap = false

  local co = coroutine.running()
  local choice
  local function decide(answer)
    if choice then
      return
    end
    choice = answer
    pending = nil
    if vim.api.nvim_win_is_valid(win) then
      vim.api.nvim_win_close(win, true)
    end
    if co and coroutine.status(co) == "suspended" then
      coroutine.resume(co, answer)
    end
  end
  pending = { decide = decide, bufnr = bufnr }
  local keys = config.options.keymaps
  local function map(key, answer)
    if key then
      vim.keymap.set("n", key, function()
        decide(answer)
      end, { buffer = bufnr, nowait = true, desc = "AgentLS: " .. answer .. " the edit" })
    end
  end
  map(keys.apply, "apply")
  map(keys.reject, "reject")
  map("q", "reject")
  vim.api.nvim_create_autocmd("BufWipeout", {
    buffer = bufnr,
    once = true,
    callback = function()
      vim.schedule(function()
        decide("reject")
      end)
    end,
  })
  if choice then
    return choice
  end
  if co and coroutine.isyieldable() then
    return coroutine.yield()
  end
  -- Not inside the client's request coroutine: ask synchronously.
  local n = vim.fn.confirm("AgentLS: apply this edit?", "&Apply\n&Reject", 2)
  decide(n == 1 and "apply" or "reject")
  return choice
end

--- :AgentApply / :AgentReject: answer the open preview.
function M.decide(answer)
  local review = require("agentls.review")
  if not pending and review.waiting() then
    review.action(answer == "apply" and "accept_all" or "reject_all")
    return
  end
  if not pending then
    vim.notify("AgentLS: no edit is waiting for an answer", vim.log.levels.WARN)
    return
  end
  pending.decide(answer)
end

function M.waiting()
  return pending ~= nil or require("agentls.review").waiting()
end

local function needs_confirmation(edit)
  if config.options.preview.confirm_all then
    return true
  end
  for _, annotation in pairs(edit.changeAnnotations or {}) do
    if annotation.needsConfirmation then
      return true
    end
  end
  return false
end

--- After applying: created files hold exactly the agent's bytes; files written if asked.
local function settle(files, modified_before)
  for _, f in ipairs(files) do
    local bufnr = f.kind ~= "delete" and loaded_buf(f.path)
    if bufnr then
      if f.exact then
        vim.bo[bufnr].fixeol = false
        vim.bo[bufnr].eol = f.exact:sub(-1) == "\n"
      end
      if config.options.preview.write and not modified_before[f.path] and vim.bo[bufnr].modified then
        vim.api.nvim_buf_call(bufnr, function()
          vim.cmd("silent keepalt write")
        end)
      end
    end
  end
end

--- The workspace/applyEdit handler of the AgentLS client.
function M.handle(_, params, ctx)
  local client = vim.lsp.get_client_by_id(ctx.client_id)
  local encoding = client and client.offset_encoding or "utf-16"
  local edit = params.edit
  local stale = M.stale(edit)
  if stale then
    require("agentls").notify("AgentLS: " .. stale, vim.log.levels.WARN)
    return { applied = false, failureReason = stale }
  end
  if config.options.review == "inline" and needs_confirmation(edit) then
    return require("agentls.review").run(edit, params.label, encoding, client, M.files)
  end
  local ok, files = pcall(M.files, edit, encoding)
  if not ok then
    return { applied = false, failureReason = "the preview could not read the edit: " .. tostring(files) }
  end
  if needs_confirmation(edit) then
    local answer = M.ask(files, params.label)
    if answer ~= "apply" then
      return { applied = false, failureReason = "rejected in the preview" }
    end
    stale = M.stale(edit) -- the person may have typed while the preview was open
    if stale then
      require("agentls").notify("AgentLS: " .. stale, vim.log.levels.WARN)
      return { applied = false, failureReason = stale }
    end
  end
  local modified_before = {}
  for _, f in ipairs(files) do
    local bufnr = loaded_buf(f.path)
    modified_before[f.path] = bufnr and vim.bo[bufnr].modified or false
  end
  local applied, err = pcall(util.apply_workspace_edit, edit, encoding)
  if not applied then
    return { applied = false, failureReason = "Neovim could not apply the edit: " .. tostring(err) }
  end
  local settled, why = pcall(settle, files, modified_before)
  if not settled then
    require("agentls").notify("AgentLS: applied, but writing failed: " .. tostring(why), vim.log.levels.ERROR)
  end
  return { applied = true }
end

return M
