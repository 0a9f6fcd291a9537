-- What a turn looks like, live and reopened alike: the lines of the person's words, the
-- chips under them, the answer's header, folded tool calls and the closing tail. Pure:
-- these functions make lines; transcript.lua and history.lua put them in the buffer.
local M = {}

function M.split(text)
  return vim.split(text or "", "\n", { plain = true })
end

--- Append `lines` to `out` as a block: one blank line after its last non-empty line.
function M.add_block(out, lines)
  while #out > 1 and out[#out] == "" do
    table.remove(out)
  end
  table.insert(out, "")
  vim.list_extend(out, lines)
end

local function size(bytes)
  if not bytes then
    return ""
  end
  if bytes >= 1000000 then
    return string.format("%.1f MB", bytes / 1000000)
  elseif bytes >= 1000 then
    return string.format("%.1f KB", bytes / 1000)
  end
  return bytes .. " B"
end

local function one_line(text)
  return ((text or ""):gsub("\n", " "))
end

--- The chips, refusals and notes under the person's words: "> " lines, each its own.
function M.context_lines(attachments, refused, notes)
  local out = {}
  for _, chip in ipairs(attachments or {}) do
    local where = chip.range and (":" .. chip.range) or ""
    local lines = chip.lines and (chip.lines .. (chip.lines == 1 and " line" or " lines")) or ""
    local line = string.format("> 📎 %s `%s%s` %s, %s", chip.kind, chip.name, where, lines, size(chip.size))
    if chip.note and chip.note ~= "" then
      line = line .. " (" .. one_line(chip.note) .. ")"
    end
    table.insert(out, line)
  end
  for _, r in ipairs(refused or {}) do
    table.insert(out, string.format("> ⊘ %s `%s` not attached: %s", r.kind, r.name, one_line(r.reason)))
  end
  for _, note in ipairs(notes or {}) do -- what AgentLS told the model: not the person's words
    table.insert(out, "_AgentLS note: " .. one_line(note) .. "_")
  end
  return out
end

function M.user_lines(text)
  local out = { "## You", "" }
  vim.list_extend(out, M.split(text))
  return out
end

function M.assistant_header(model)
  return { "## AgentLS" .. ((model and model ~= vim.NIL and model ~= "") and (" · " .. model) or "") }
end

function M.tool_call_lines(name, arguments)
  return { string.format("> ⚙ %s {{{", name or "tool"), "> " .. one_line(arguments) }
end

function M.tool_result_line(ok, summary)
  return string.format("> %s %s }}}", ok == false and "✗" or "✓", one_line(summary))
end

local function tail_line(outcome, changes)
  local tail = {}
  if outcome and outcome ~= vim.NIL and outcome ~= "done" then
    table.insert(tail, "stopped: " .. outcome)
  end
  if changes and changes ~= vim.NIL then
    local applied = changes.applied
    table.insert(
      tail,
      (changes.text or "") .. (applied == true and " (applied)" or applied == false and " (not applied)" or "")
    )
  end
  return #tail > 0 and ("_" .. table.concat(tail, "; ") .. "_") or nil
end

--- The lines of one display-ready turn (agentls/turns) appended to `out`; the rows of its
--- tool lines are marked in `tool_rows`.
function M.turn_lines(turn, out, tool_rows)
  local user = turn.user or {}
  M.add_block(out, M.user_lines(user.text))
  local context = M.context_lines(user.attachments, user.refused, user.notes)
  if #context > 0 then
    M.add_block(out, context)
  end
  if #(turn.steps or {}) > 0 or (turn.outcome and turn.outcome ~= vim.NIL) then
    M.add_block(out, M.assistant_header(turn.model))
  end
  for _, step in ipairs(turn.steps or {}) do
    if step.kind == "text" then
      local text = (step.text or ""):gsub("^\n+", "")
      if text ~= "" then
        M.add_block(out, M.split(text))
      end
    elseif step.kind == "toolCall" then
      local call = M.tool_call_lines(step.name, step.arguments)
      table.insert(call, M.tool_result_line(step.ok, step.summary))
      M.add_block(out, call)
      for row = #out - #call + 1, #out do
        tool_rows[row] = true
      end
    end
  end
  local tail = tail_line(turn.outcome, turn.changes)
  if tail then
    M.add_block(out, { tail })
  end
end

return M
