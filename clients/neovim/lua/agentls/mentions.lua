-- Mentions in the chat's prompt: `#buffer`, `#selection`, `#diagnostics`, `#changes`,
-- `#file:<path>`, `@<symbol>`, `#url:<url>`. Completion asks the server (agentls/mentions,
-- one implementation for every client) through omnifunc / completefunc, so the built-in
-- completion and any plugin reading them see it; on send, each mention becomes a reference
-- the server resolves into an attachment (or refuses, saying why).
local M = {}

local FIXED = { buffer = true, selection = true, diagnostics = true, changes = true }

--- The references of the mentions in `prompt`; `source` is the buffer the person came from
--- (what #buffer, #selection and #diagnostics mean).
function M.references(prompt, source)
  local refs, seen = {}, {}
  local function add(key, ref)
    if not seen[key] then
      seen[key] = true
      table.insert(refs, ref)
    end
  end
  local valid_source = source and vim.api.nvim_buf_is_valid(source) and vim.api.nvim_buf_get_name(source) ~= ""
  local uri = valid_source and vim.uri_from_bufnr(source) or nil
  for word in (" " .. prompt):gmatch("%s(#[%w_:%./%-~]+)") do
    local name, arg = word:match("^#(%w+):?(.*)$")
    arg = (arg or ""):gsub("[%.:,;]+$", "")
    if name == "file" and arg ~= "" then
      add("file:" .. arg, { kind = "file", path = arg })
    elseif name == "url" and arg ~= "" then
      add("url:" .. arg, { kind = "url", url = arg })
    elseif name == "changes" then
      add("changes", { kind = "changes" })
    elseif FIXED[name] and uri then
      if name == "buffer" then
        add("buffer", { kind = "buffer", uri = uri })
      elseif name == "selection" then
        local from = vim.api.nvim_buf_get_mark(source, "<")
        local to = vim.api.nvim_buf_get_mark(source, ">")
        if from[1] > 0 and to[1] > 0 then
          local last = vim.api.nvim_buf_get_lines(source, to[1] - 1, to[1], false)[1] or ""
          add("selection", {
            kind = "selection",
            uri = uri,
            range = {
              start = { line = from[1] - 1, character = 0 },
              ["end"] = { line = to[1] - 1, character = #last },
            },
          })
        end
      elseif name == "diagnostics" then
        local items = {}
        for _, d in ipairs(vim.diagnostic.get(source)) do
          table.insert(items, {
            uri = uri,
            range = {
              start = { line = d.lnum, character = d.col },
              ["end"] = { line = d.end_lnum or d.lnum, character = d.end_col or d.col },
            },
            message = d.message,
            severity = d.severity,
            source = d.source,
          })
        end
        add("diagnostics", { kind = "diagnostics", uri = uri, diagnostics = items })
      end
    end
  end
  for url in (" " .. prompt):gmatch("%s@(https?://%S+)") do
    add("url:" .. url, { kind = "url", url = url })
  end
  for name, rest in (" " .. prompt):gmatch("%s@([%a_][%w_%.]*)(%S*)") do
    if not rest:match("^:") then -- not a URL (@https://…)
      add("symbol:" .. name:gsub("%.+$", ""), { kind = "symbol", name = (name:gsub("%.+$", "")) })
    end
  end
  return refs
end

--- The mention under the cursor: (0-based start column, text from the trigger to the cursor).
local function mention_before_cursor()
  local line = vim.api.nvim_get_current_line()
  local col = vim.api.nvim_win_get_cursor(0)[2]
  local before = line:sub(1, col)
  local start = before:find("[#@][^%s]*$")
  if not start or (start > 1 and not before:sub(start - 1, start - 1):match("%s")) then
    return nil
  end
  return start - 1, before:sub(start)
end

--- omnifunc / completefunc: candidates from the server for what follows `#` or `@`.
function M.complete(findstart, base)
  if findstart == 1 then
    local start = mention_before_cursor()
    return start or -3 -- -3: no completion here, and leave completion mode
  end
  local client = require("agentls").client(require("agentls.chat").state().source)
  if not client then
    return {}
  end
  local trigger, query = base:sub(1, 1), base:sub(2)
  local kinds = trigger == "@" and { "symbol" } or nil
  local params = { query = query, kinds = kinds, limit = 50 }
  local response
  if vim.fn.has("nvim-0.11") == 1 then
    response = client:request_sync("agentls/mentions", params, 2000)
  else
    response = client.request_sync("agentls/mentions", params, 2000)
  end
  if not response or response.err or not response.result then
    return {}
  end
  local out = {}
  for _, item in ipairs(response.result.items or {}) do
    table.insert(out, {
      word = item.text,
      abbr = item.text,
      menu = item.detail,
      kind = item.kind == "file" and "f" or (item.kind == "symbol" and "s" or "m"),
      icase = 1,
      dup = 0,
    })
  end
  return out
end

return M
