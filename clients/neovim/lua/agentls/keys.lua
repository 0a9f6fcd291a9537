-- The global keys of `keymaps` (chat, ask, sessions, model, mode, cancel_turn): none is set
-- unless the person names a key for it (`:help agentls-keymaps`).
local M = {}

local GLOBAL = {
  chat = { "n", "<Cmd>AgentChat<CR>", "AgentLS: toggle the chat" },
  ask = { "x", ":<C-u>lua require('agentls.keys').ask()<CR>", "AgentLS: ask about the selection" },
  sessions = { "n", "<Cmd>AgentSessions<CR>", "AgentLS: reopen a session" },
  model = { "n", "<Cmd>AgentModel<CR>", "AgentLS: pick the chat's model" },
  mode = { "n", "<Cmd>AgentMode<CR>", "AgentLS: pick the chat's mode" },
  cancel_turn = { "n", "<Cmd>AgentCancel<CR>", "AgentLS: stop the running turn" },
}

--- Visual-mode `ask`: the prompt, then :'<,'>AgentAsk.
function M.ask()
  vim.ui.input({ prompt = "AgentLS: ask about the selection: " }, function(text)
    if text and text ~= "" then
      vim.cmd("'<,'>AgentAsk " .. text)
    end
  end)
end

M.set = {} -- what setup() mapped, so a second setup() takes them back first

function M.setup(keymaps)
  for _, entry in ipairs(M.set) do
    pcall(vim.keymap.del, entry[1], entry[2])
  end
  M.set = {}
  for name, spec in pairs(GLOBAL) do
    local key = keymaps[name]
    if type(key) == "string" and key ~= "" then
      vim.keymap.set(spec[1], key, spec[2], { desc = spec[3] })
      table.insert(M.set, { spec[1], key })
    end
  end
end

return M
