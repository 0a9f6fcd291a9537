-- A turn: the person's prompt sent as agentls/chat, its agentls/chatEvent stream written
-- into the transcript as it happens, and :AgentCancel.
local chat = require("agentls.chat.state")
local config = require("agentls.config")
local mentions = require("agentls.mentions")
local render = require("agentls.chat.render")
local transcript = require("agentls.chat.transcript")
local window = require("agentls.chat.window")
local winbar = require("agentls.chat.winbar")

local M = {}

local block, new_block = transcript.block, transcript.new_block

--- Why a turn whose edit is in review goes on: the review ends it.
local function review_wait()
  local k = config.options.review_keys
  return string.format(
    "its edit is waiting for your review; the turn ends with it (%s keep all, %s reject all)",
    k.accept_all or ":AgentReview accept_all",
    k.reject_all or ":AgentReview reject_all"
  )
end

--- Send `prompt` (with an optional context {uri, range}) as one agentls/chat turn.
function M.send(prompt, context)
  if prompt == nil or vim.trim(prompt) == "" then
    vim.notify("AgentLS: type a prompt under the separator first", vim.log.levels.WARN)
    return
  end
  local agentls = require("agentls")
  window.remember_source()
  local source = chat.source or vim.api.nvim_get_current_buf()
  if chat.run then
    local why = require("agentls.review").waiting() and review_wait() or ":AgentCancel stops it"
    vim.notify("AgentLS: a turn is still running; " .. why, vim.log.levels.WARN)
    return
  end
  local client = agentls.client(source)
  if not client then
    agentls.notify(
      "AgentLS is not running: open a file of the project first (:checkhealth agentls)",
      vim.log.levels.ERROR
    )
    return
  end
  window.show()
  block(render.user_lines(prompt), nil)
  local params = {
    prompt = prompt,
    sessionId = chat.session,
    context = context,
    references = mentions.references(prompt, source),
    model = chat.pending.model,
    mode = chat.pending.mode,
  }
  if #params.references == 0 then
    params.references = nil
  end
  chat.client = client
  chat.run = "pending"
  chat.cancelled = nil
  local _, id = agentls.call(client, "agentls/chat", params, function(err, result)
    chat.run, chat.request = nil, nil
    if err then
      new_block("\n**Error:** " .. (err.message or vim.inspect(err)) .. "\n", "AgentlsChatError")
      return
    end
    chat.pending = {}
    chat.session = result.sessionId
    local tail = {}
    if result.stopReason and result.stopReason ~= "done" then
      table.insert(tail, "stopped: " .. result.stopReason)
    end
    if result.applied == true then
      table.insert(tail, "edit applied")
    elseif result.partial then -- what the review kept, as the server read it
      table.insert(tail, "edit partly applied: " .. (result.failureReason or ""))
    elseif result.applied == false then
      table.insert(tail, "edit not applied" .. (result.failureReason and (": " .. result.failureReason) or ""))
    end
    if #tail > 0 then
      new_block("\n_" .. table.concat(tail, "; ") .. "_\n")
    end
  end, source)
  chat.request = id
end

function M.send_prompt_area()
  if not transcript.valid() then
    return
  end
  local prompt = transcript.prompt_area()
  local row = transcript.separator_row()
  vim.api.nvim_buf_set_lines(chat.bufnr, row + 1, -1, false, { "" })
  M.send(prompt)
end

--- :'<,'>AgentAsk {prompt}: the selection goes along as context.
function M.ask(prompt, line1, line2)
  local bufnr = vim.api.nvim_get_current_buf()
  local last = vim.api.nvim_buf_get_lines(bufnr, line2 - 1, line2, false)[1] or ""
  local context = {
    uri = vim.uri_from_bufnr(bufnr),
    range = { start = { line = line1 - 1, character = 0 }, ["end"] = { line = line2 - 1, character = #last } },
  }
  M.send(prompt, context)
end

--- :AgentCancel: stop the turn; whatever it still streams is dropped.
function M.cancel()
  if not chat.run or not chat.client then
    vim.notify("AgentLS: nothing is running", vim.log.levels.INFO)
    return
  end
  chat.cancelled = chat.run
  if chat.run == "pending" then
    if chat.request then
      require("agentls").cancel_request(chat.client, chat.request)
    end
  else
    local run = chat.run
    require("agentls").call(chat.client, "agentls/cancel", { runId = run }, function(err, result)
      if not err and result and result.cancelled then
        return
      end
      -- Not stopped (its edit is out for review, or it had ended): say so, show what follows.
      if chat.cancelled == run then
        chat.cancelled = nil
      end
      local why = require("agentls.review").waiting() and review_wait()
        or (err and err.message or "it had already finished")
      new_block("\n_not stopped: " .. why .. "_\n")
    end)
  end
  new_block("\n_cancelling…_\n")
end

--- agentls/chatEvent: the transcript as it happens.
function M.on_event(event, _)
  if (event.kind == "status" and event.topic ~= "instructions") or event.kind == "retry" then
    -- (which instruction files a session loaded is for the log, not a message to wait on)
    require("agentls").notify("AgentLS: " .. (event.message or event.kind))
  elseif event.kind == "error" then
    require("agentls").notify("AgentLS: " .. (event.message or "error"), vim.log.levels.WARN)
  end
  if not transcript.valid() or (chat.session and event.sessionId ~= chat.session) then
    return
  end
  if chat.run == "pending" then
    if chat.cancelled == "pending" then
      chat.cancelled = event.runId
    end
    chat.run, chat.session = event.runId, event.sessionId
  elseif event.runId ~= chat.run and event.kind ~= "done" then
    if chat.run ~= nil then
      return
    end
  end
  if chat.cancelled and event.runId == chat.cancelled then
    return -- the person cancelled this run: what it still sends is not shown
  end
  if event.kind == "turn" then
    chat.model, chat.mode = event.model, event.mode
    winbar.update()
    local lines = render.context_lines(event.attachments, event.refused, event.notes)
    if #lines > 0 then
      block(lines)
    end
    block(render.assistant_header(event.model))
    chat.fresh = true -- the answer's text starts a block of its own
  elseif event.kind == "text" then
    local text = event.text or ""
    if chat.fresh then
      text = text:gsub("^\n+", "")
      if text ~= "" then
        block(render.split(text))
      end
    else
      transcript.append(text)
    end
  elseif event.kind == "toolCall" then
    block(render.tool_call_lines(event.name, event.arguments), "AgentlsChatTool")
  elseif event.kind == "toolResult" then
    transcript.append("\n" .. render.tool_result_line(event.ok, event.summary), "AgentlsChatTool")
    chat.fresh = true
  elseif event.kind == "error" then
    new_block(
      "\n**Error:** "
        .. (event.message or "")
        .. (event.hint and event.hint ~= "" and (" (" .. event.hint .. ")") or "")
        .. "\n",
      "AgentlsChatError"
    )
  end
end

return M
