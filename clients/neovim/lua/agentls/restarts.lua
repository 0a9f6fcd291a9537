-- When the AgentLS server stops without being asked: start it again, a little later each
-- time, and give up after a few stops close together. The same policy as the VS Code
-- extension (clients/vscode/src/pure/restarts.ts). Pure: no Neovim API, no clock.
local M = {}

M.WINDOW_MS = 3 * 60 * 1000 -- stops older than this are forgotten
M.MAX_RESTARTS = 4 -- within the window; the next stop ends the server
M.FIRST_DELAY_MS = 500
M.MAX_DELAY_MS = 4000

--- The decision for a stop at `now` (ms), given the earlier stops' times (updated in place):
--- `{ restart = true, delay_ms = n, attempt = k }` or `{ restart = false, stops = n }`.
function M.on_stop(stops, now)
  while #stops > 0 and now - stops[1] > M.WINDOW_MS do
    table.remove(stops, 1)
  end
  table.insert(stops, now)
  if #stops > M.MAX_RESTARTS then
    return { restart = false, stops = #stops }
  end
  local attempt = #stops
  return {
    restart = true,
    attempt = attempt,
    delay_ms = math.min(M.MAX_DELAY_MS, M.FIRST_DELAY_MS * 2 ^ (attempt - 1)),
  }
end

return M
