-- Options: documented defaults, merged with the user's and validated (`:help agentls-options`).
local M = {}

M.defaults = {
  -- The server command; `agentls` must be on $PATH (pipx install agentls, or a venv).
  cmd = { "agentls", "serve" },
  -- Where a project starts; the first marker found upwards from the file wins.
  root_markers = { ".agentls", ".git" },
  -- Sent as initializationOptions and `workspace/configuration` section `agentls`.
  settings = {},
  -- The key is never passed through Neovim: the server inherits the environment, or the
  -- server command is wrapped by `sh` to read it (api_key_cmd / api_key_file) itself.
  api_key_env = "OPENAI_API_KEY",
  api_key_cmd = nil, -- shell command printing the key, e.g. "pass show openai"
  api_key_file = nil, -- file holding the key
  -- Edit preview: every workspace/applyEdit from AgentLS is shown as a diff first.
  preview = {
    confirm_all = true, -- false: edits whose annotations do not ask for confirmation apply directly
    write = true, -- write the files an accepted edit changed (buffers that had no unsaved changes)
    layout = "float", -- "float" or "split"
  },
  chat = {
    layout = "vsplit", -- "vsplit", "split" or "tab"
  },
  keymaps = {
    send = "<C-s>", -- chat buffer: send the prompt (normal and insert mode)
    cancel = "<C-c>", -- chat buffer: stop the running turn
    apply = "a", -- preview: apply the whole edit
    reject = "r", -- preview: reject it (also q)
    -- Global keys, off by default (false); suggested: chat = "<leader>ac",
    -- ask = "<leader>aa" (visual: ask about the selection), sessions = "<leader>as",
    -- model = "<leader>am", mode = "<leader>ao", cancel_turn = "<leader>ax".
    chat = false, -- :AgentChat (toggle)
    ask = false, -- visual mode: ask about the selection (prompted)
    sessions = false, -- :AgentSessions
    model = false, -- :AgentModel
    mode = false, -- :AgentMode
    cancel_turn = false, -- :AgentCancel
  },
  notify = true, -- $/progress and run state through vim.notify
  -- How an edit is reviewed: "inline" in the buffers, hunk by hunk (`:help agentls-review`),
  -- or "float": the whole edit as one diff, applied or rejected at once.
  review = "inline",
  -- Keys of the inline review, set in the reviewed buffers and the review list while a
  -- review is open (buffer-local mappings there are put back after); false disables one.
  review_keys = {
    accept = "ga", -- keep the change under the cursor (in the list: that line's change or file)
    reject = "gr", -- reject it: its old lines come back
    next = "]h", -- next pending change (across files)
    prev = "[h", -- previous pending change
    accept_all = "gA", -- keep every pending change
    reject_all = "gR", -- reject every pending change
  },
  -- Completions as you type (`:help agentls-completion`); the server needs a completion
  -- model (settings.completion.model) for any to come.
  completion = {
    enabled = true, -- false: off until :AgentCompletionToggle
    auto = true, -- ask as you type; false: only on completion_keys.request
  },
  -- Insert-mode keys while ghost text is shown (a key with nothing shown does what it did);
  -- false disables one.
  completion_keys = {
    accept = "<Tab>", -- insert the whole suggestion
    accept_word = "<M-w>", -- insert its next word
    accept_line = "<M-l>", -- insert its next line
    dismiss = "<C-]>", -- hide it
    request = "<M-\\>", -- ask now (when auto is false, or to ask again)
  },
  -- Next-edit suggestions (`:help agentls-next-edit`), off by default; the server needs a
  -- next-edit model too (settings.next_edit.model).
  next_edit = {
    enabled = false, -- true: ask after each change in normal mode
    debounce_ms = 150, -- pause after a change before asking
  },
  -- Normal-mode keys while a next edit is shown (a key with nothing shown does what it did);
  -- false disables one.
  next_edit_keys = {
    accept = "<Tab>", -- apply it and ask for the next (off screen: jump to it first)
    dismiss = "<Esc>", -- hide it; the server will not offer it again
  },
}

-- The table form of vim.validate works on 0.10 and 0.11 alike.
local function validate(name, value, kind, optional)
  vim.validate({ [name] = { value, kind, optional } })
end

local function check(opts)
  validate("cmd", opts.cmd, "table")
  if #opts.cmd == 0 or type(opts.cmd[1]) ~= "string" then
    error("agentls: opts.cmd must be a list of strings such as { 'agentls', 'serve' }", 0)
  end
  validate("root_markers", opts.root_markers, "table")
  validate("settings", opts.settings, "table")
  validate("api_key_env", opts.api_key_env, "string")
  validate("api_key_cmd", opts.api_key_cmd, "string", true)
  validate("api_key_file", opts.api_key_file, "string", true)
  validate("preview", opts.preview, "table")
  validate("preview.confirm_all", opts.preview.confirm_all, "boolean")
  validate("preview.write", opts.preview.write, "boolean")
  if opts.preview.layout ~= "float" and opts.preview.layout ~= "split" then
    error("agentls: preview.layout must be 'float' or 'split', not " .. vim.inspect(opts.preview.layout), 0)
  end
  local layouts = { vsplit = true, split = true, tab = true }
  if not layouts[opts.chat.layout] then
    error("agentls: chat.layout must be 'vsplit', 'split' or 'tab', not " .. vim.inspect(opts.chat.layout), 0)
  end
  validate("keymaps", opts.keymaps, "table")
  for name, key in pairs(opts.keymaps) do
    validate("keymaps." .. name, key, { "string", "boolean" })
  end
  validate("notify", opts.notify, "boolean")
  if opts.review ~= "inline" and opts.review ~= "float" then
    error("agentls: review must be 'inline' or 'float', not " .. vim.inspect(opts.review), 0)
  end
  validate("review_keys", opts.review_keys, "table")
  for name, key in pairs(opts.review_keys) do
    if M.defaults.review_keys[name] == nil then
      error(
        "agentls: review_keys."
          .. name
          .. " is not a review key; they are accept, reject, next, prev, "
          .. "accept_all, reject_all",
        0
      )
    end
    validate("review_keys." .. name, key, { "string", "boolean" })
  end
  validate("completion", opts.completion, "table")
  validate("completion.enabled", opts.completion.enabled, "boolean")
  validate("completion.auto", opts.completion.auto, "boolean")
  validate("completion_keys", opts.completion_keys, "table")
  for name, key in pairs(opts.completion_keys) do
    if M.defaults.completion_keys[name] == nil then
      error(
        "agentls: completion_keys."
          .. name
          .. " is not a completion key; they are accept, "
          .. "accept_word, accept_line, dismiss, request",
        0
      )
    end
    validate("completion_keys." .. name, key, { "string", "boolean" })
  end
  validate("next_edit", opts.next_edit, "table")
  validate("next_edit.enabled", opts.next_edit.enabled, "boolean")
  validate("next_edit.debounce_ms", opts.next_edit.debounce_ms, "number")
  validate("next_edit_keys", opts.next_edit_keys, "table")
  for name, key in pairs(opts.next_edit_keys) do
    if M.defaults.next_edit_keys[name] == nil then
      error("agentls: next_edit_keys." .. name .. " is not a next-edit key; they are accept, dismiss", 0)
    end
    validate("next_edit_keys." .. name, key, { "string", "boolean" })
  end
  if not opts.api_key_env:match("^[%a_][%w_]*$") then
    error("agentls: api_key_env must be an environment variable name, not " .. vim.inspect(opts.api_key_env), 0)
  end
end

M.options = vim.deepcopy(M.defaults)

--- Merge `opts` over the defaults; raises a readable error for a bad value.
function M.set(opts)
  local merged = vim.tbl_deep_extend("force", vim.deepcopy(M.defaults), opts or {})
  if opts and opts.cmd then
    merged.cmd = opts.cmd -- a list replaces, never merges
  end
  if opts and opts.root_markers then
    merged.root_markers = opts.root_markers
  end
  check(merged)
  M.options = merged
  return merged
end

--- The command that starts the server. With api_key_cmd / api_key_file, `sh` reads the key
--- into the server's own environment, so it never passes through Neovim or its LSP log.
function M.server_cmd(opts)
  opts = opts or M.options
  local read
  if opts.api_key_cmd then
    read = opts.api_key_cmd
  elseif opts.api_key_file then
    read = "cat " .. vim.fn.shellescape(vim.fn.expand(opts.api_key_file))
  else
    return vim.deepcopy(opts.cmd)
  end
  local script = string.format('%s="$(%s)" || exit 78; export %s; exec "$@"', opts.api_key_env, read, opts.api_key_env)
  return vim.list_extend({ "sh", "-c", script, "agentls" }, vim.deepcopy(opts.cmd))
end

return M
