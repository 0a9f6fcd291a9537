-- What the two as-you-type suggestions (completion.lua's ghost text, next_edit.lua's next edit)
-- share, each over its own state table: the server's status kept, the suggestion on screen
-- cleared, the request in flight cancelled.
local M = {}

--- The server's status notification ({ status, message }) kept in `state`; an error is told
--- once, when it starts (`what` names the feature in the message).
function M.on_status(state, params, what)
  local previous = state.status
  state.status = params.status or "idle"
  state.message = params.message or ""
  if state.status == "error" and previous ~= "error" and state.message ~= "" then
    require("agentls").notify("AgentLS " .. what .. ": " .. state.message, vim.log.levels.WARN)
  end
end

--- Forget the suggestion shown (`state.shown`, drawn in `shown.bufnr`) and clear its marks.
function M.clear(state, ns)
  local shown = state.shown
  state.shown = nil
  if shown and vim.api.nvim_buf_is_valid(shown.bufnr) then
    vim.api.nvim_buf_clear_namespace(shown.bufnr, ns, 0, -1)
  end
end

--- Cancel the request in flight (`state.pending`: { client, id }), if any.
function M.cancel_pending(state)
  local pending = state.pending
  state.pending = nil
  if pending and pending.id then
    pcall(require("agentls").cancel_request, pending.client, pending.id)
  end
end

return M
