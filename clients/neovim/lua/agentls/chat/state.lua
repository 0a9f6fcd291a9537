-- The one chat buffer's state: its session, its running turn and the buffer the person came
-- from (what #buffer, #selection and #diagnostics mean). One chat buffer is enough; every
-- chat/ module reads and writes this table, and require("agentls.chat").state() returns it.
return {
  bufnr = nil,
  session = nil,
  run = nil,
  client = nil,
  request = nil,
  separator = nil,
  cancelled = nil, -- the run (or "pending") the person cancelled: its late text is dropped
  source = nil,
  model = nil,
  mode = nil,
  pending = {}, -- model / mode picked before the session exists: sent with the first turn
}
