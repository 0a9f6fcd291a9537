-- The chat's model and mode: :AgentModel and :AgentMode, set on the session (or kept for
-- the first turn before one exists), with the backends' models listed to pick from.
local chat = require("agentls.chat.state")
local winbar = require("agentls.chat.winbar")

local M = {}

local function set_option(key, value)
  if not chat.session then -- no session yet: the first turn carries it
    chat.pending[key] = value
    winbar.update()
    require("agentls").notify(string.format("AgentLS: %s %s for this chat's first turn", key, value))
    return
  end
  local method = key == "model" and "agentls/setModel" or "agentls/setMode"
  require("agentls").request(method, { sessionId = chat.session, [key] = value }, function(err, result)
    if err then
      require("agentls").notify("AgentLS: " .. (err.message or "refused"), vim.log.levels.ERROR)
      return
    end
    chat.model, chat.mode = result.model, result.mode
    winbar.update()
    require("agentls").notify("AgentLS: " .. (result.message or ""))
  end, chat.source)
end

-- The last probing answer of agentls/models per server (client id): the backends as they
-- answered. vim.ui.select cannot change its list once open, so :AgentModel opens at once with
-- what is known (this, or the configured models marked "not checked yet") and asks the
-- backends again for the next time.
local probed = {}

--- The models to pick from: the active backend's first, the others by backend name.
local function model_items(backends, checked)
  local items = {}
  for _, b in ipairs(backends or {}) do
    if b.status ~= "cli" then
      for i, model in ipairs(b.models or {}) do
        table.insert(items, {
          backend = b.name,
          model = model,
          status = b.status,
          checked = checked,
          active = b.active and 0 or 1,
          order = i,
        })
      end
    end
  end
  table.sort(items, function(x, y)
    if x.active ~= y.active then
      return x.active < y.active
    end
    if x.backend ~= y.backend then
      return x.backend < y.backend
    end
    return x.order < y.order
  end)
  return items
end

--- "gpt-4o  (openai)"; a model not known to be served says why: "(openai, not checked
--- yet)" before the backends answered, "(openai, unreachable)" after.
local function model_label(i)
  local status = ""
  if not i.checked then
    status = ", not checked yet"
  elseif i.status ~= "available" then
    status = ", " .. i.status
  end
  return string.format("%s  (%s%s)", i.model, i.backend, status)
end

--- Asks the backends for their models (up to about a second each, side by side); the answer
--- is kept for the next :AgentModel.
local function probe_models(client)
  require("agentls").call(client, "agentls/models", { sessionId = chat.session }, function(err, result)
    if err or not result then
      probed[client.id] = nil
      require("agentls").notify(
        "AgentLS: the backends could not be asked for their models: " .. (err and err.message or "no answer"),
        vim.log.levels.WARN
      )
      return
    end
    probed[client.id] = result.backends or {}
  end)
end

local function show_models(items)
  vim.ui.select(items, { prompt = "AgentLS model", format_item = model_label }, function(choice)
    if choice then
      set_option("model", choice.model)
    end
  end)
end

--- :AgentModel [name]: switch the chat's model (a list to pick from without a name). The list
--- opens at once: the backends' last answer, or the configured models (probe = false, nothing
--- asked over the network) marked "not checked yet"; the backends are asked meanwhile.
function M.pick_model(name)
  if name and name ~= "" then
    return set_option("model", name)
  end
  local agentls = require("agentls")
  local client = agentls.client(chat.source or vim.api.nvim_get_current_buf())
  if client and probed[client.id] then
    show_models(model_items(probed[client.id], true))
  else
    agentls.request("agentls/models", { sessionId = chat.session, probe = false }, function(err, result)
      if err then
        agentls.notify("AgentLS: " .. (err.message or "no models"), vim.log.levels.ERROR)
        return
      end
      show_models(model_items(result.backends, false))
    end, chat.source)
  end
  if client then
    probe_models(client) -- for the next time
  end
end

--- The backends' last answer to :AgentModel's probe (nil before one came): for tests.
function M.probed_models()
  local client = require("agentls").client(chat.source)
  return client and probed[client.id]
end

--- :AgentMode [ask|edit|agent]: switch the chat's mode.
function M.pick_mode(name)
  if name and name ~= "" then
    return set_option("mode", name)
  end
  local modes = {
    { name = "ask", description = "reads and answers; changes nothing" },
    { name = "edit", description = "proposes file changes for your review; no commands" },
    { name = "agent", description = "changes files and runs sandboxed commands" },
  }
  vim.ui.select(modes, {
    prompt = "AgentLS mode",
    format_item = function(m)
      return m.name .. "  " .. m.description
    end,
  }, function(choice)
    if choice then
      set_option("mode", choice.name)
    end
  end)
end

return M
