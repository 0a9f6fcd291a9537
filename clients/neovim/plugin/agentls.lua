-- AgentLS commands; the plugin starts nothing until require("agentls").setup() is called.
if vim.g.loaded_agentls then
  return
end
vim.g.loaded_agentls = true

local function cmd(name, fn, opts)
  vim.api.nvim_create_user_command(name, fn, opts or {})
end

cmd("AgentChat", function(o)
  require("agentls.chat").open(o.args)
end, { nargs = "*", desc = "AgentLS: toggle the chat (open, go to, close), or send a prompt" })
cmd("AgentModel", function(o)
  require("agentls.chat").pick_model(o.args)
end, { nargs = "?", desc = "AgentLS: the chat's model (pick one without an argument)" })
cmd("AgentMode", function(o)
  require("agentls.chat").pick_mode(o.args)
end, {
  nargs = "?",
  complete = function()
    return { "ask", "edit", "agent" }
  end,
  desc = "AgentLS: the chat's mode: ask, edit or agent",
})
cmd("AgentAsk", function(o)
  require("agentls.chat").ask(o.args, o.line1, o.line2)
end, { nargs = "+", range = true, desc = "AgentLS: ask about the selected lines" })
cmd("AgentCancel", function()
  require("agentls.chat").cancel()
end, { desc = "AgentLS: stop the running turn" })
cmd("AgentSessions", function()
  require("agentls.chat").sessions()
end, { desc = "AgentLS: reopen a session" })
cmd("AgentCommitMessage", function()
  require("agentls").commit_message()
end, { desc = "AgentLS: write the commit message for the staged changes" })
cmd("AgentApply", function()
  require("agentls.preview").decide("apply")
end, { desc = "AgentLS: apply the edit in the preview" })
cmd("AgentReject", function()
  require("agentls.preview").decide("reject")
end, { desc = "AgentLS: reject the edit in the preview" })
cmd("AgentReview", function(o)
  require("agentls.review").action(o.args)
end, {
  nargs = "?",
  complete = function()
    return require("agentls.review").action_names
  end,
  desc = "AgentLS: the open review: accept, reject, next, prev, accept_all, reject_all, list",
})
cmd("AgentSend", function()
  require("agentls.chat").send_prompt_area()
end, { desc = "AgentLS: send the chat buffer's prompt area" })
cmd("AgentRestart", function()
  require("agentls").restart()
end, { desc = "AgentLS: restart the server" })
cmd("AgentCompletionToggle", function()
  require("agentls.completion").toggle()
end, { desc = "AgentLS: turn completions as you type off or on" })
