-- Highlight groups, linked to standard ones so every colour scheme works.
local M = {}

M.groups = {
  AgentlsDiffAdd = "DiffAdd",
  AgentlsDiffDelete = "DiffDelete",
  AgentlsFileHeader = "Title",
  AgentlsFileCreated = "DiagnosticOk",
  AgentlsFileDeleted = "DiagnosticError",
  AgentlsFileRenamed = "DiagnosticWarn",
  AgentlsFileSkipped = "Comment",
  AgentlsChatUser = "Title",
  AgentlsChatTool = "Comment",
  AgentlsChatNote = "DiagnosticInfo",
  AgentlsChatError = "DiagnosticError",
  AgentlsPromptSeparator = "FloatBorder",
  AgentlsReviewAdd = "DiffAdd", -- a proposed line in the buffer
  AgentlsReviewDelete = "DiffDelete", -- a removed line (virtual)
  AgentlsReviewSignAdd = "Added",
  AgentlsReviewSignDelete = "Removed",
  AgentlsGhostText = "Comment", -- a completion shown as you type
  AgentlsNextEditDelete = "DiffDelete", -- the text a next edit replaces
  AgentlsNextEditAdd = "DiffAdd", -- the text it puts there (virtual)
  AgentlsNextEditHint = "Comment", -- where it is, when it is off screen
}

function M.setup()
  for group, link in pairs(M.groups) do
    vim.api.nvim_set_hl(0, group, { link = link, default = true })
  end
end

return M
