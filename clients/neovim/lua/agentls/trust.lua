-- Project trust: the server counts the loosening keys of a project's `.agentls/config.toml`
-- (backends, sandbox, permissions) only in a trusted workspace. Neovim has no workspace
-- trust of its own, so the plugin offers `vim.secure.read` on that file (Neovim's trust
-- list, by content, as for `.nvim.lua`) and passes the answer as
-- `initializationOptions.workspaceTrusted`, as the VS Code extension does.
local M = {}

--- The initializationOptions for a project root: `base` plus `workspaceTrusted` when the
--- project has a config file (asked the first time and whenever the file changed).
function M.init_options(root, base)
  local options = vim.deepcopy(base or {})
  if type(root) ~= "string" then
    return options
  end
  local path = root .. "/.agentls/config.toml"
  if vim.fn.filereadable(path) == 0 then
    return options
  end
  if vim.tbl_isempty(options) then
    options = vim.empty_dict() -- an object on the wire, not []
  end
  local ok, contents = pcall(vim.secure.read, path)
  options.workspaceTrusted = ok and contents ~= nil
  return options
end

return M
