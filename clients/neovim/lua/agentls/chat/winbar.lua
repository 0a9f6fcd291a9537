-- The winbar of the chat's windows: the session's model and mode (:AgentModel / :AgentMode
-- switch them), and the server's defaults asked for before a session exists.
local chat = require("agentls.chat.state")
local transcript = require("agentls.chat.transcript")

local M = {}

local function text()
  local model = chat.pending.model or chat.model or "…"
  local mode = chat.pending.mode or chat.mode or "agent"
  -- Short, so a narrow window shows it whole; :AgentModel / :AgentMode switch them.
  return string.format("%%#AgentlsChatUser#AgentLS%%* %%<model: %s · mode: %s", (model:gsub("%%", "%%%%")), mode)
end

function M.update()
  for _, win in ipairs(transcript.windows()) do
    vim.wo[win].winbar = text()
  end
  vim.cmd.redrawstatus({ bang = true, mods = { emsg_silent = true } }) -- statusline() changed
end

--- The model and mode a new chat would use (the server's defaults), for the winbar: the
--- names only, answered from the configuration (probe = false: no backend is asked).
function M.fetch_options()
  local client = require("agentls").client(chat.source)
  if not client or chat.model then
    return
  end
  require("agentls").call(client, "agentls/models", { sessionId = chat.session, probe = false }, function(err, result)
    if err or not result then
      return
    end
    if result.session then
      chat.model, chat.mode = result.session.model, result.session.mode
    else
      for _, b in ipairs(result.backends or {}) do
        if b.active then
          chat.model = b.model
        end
      end
      chat.mode = chat.mode or result.defaultMode
    end
    M.update()
  end)
end

--- For a statusline: the chat's model and mode, "" before a chat is opened.
function M.statusline()
  if not transcript.valid() then
    return ""
  end
  return string.format("%s · %s", chat.pending.model or chat.model or "…", chat.pending.mode or chat.mode or "agent")
end

return M
