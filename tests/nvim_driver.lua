-- Driven by tests/test_nvim_e2e.py: the shipped config is loaded (by init.lua, or here from
-- $MLIR_LSP_CONFIG), then check, fix, write, re-check.
if vim.env.MLIR_LSP_CONFIG then dofile(vim.env.MLIR_LSP_CONFIG) end
local out = {}
local function finish()
  local f = io.open(vim.env.NVIM_RESULT, "w"); f:write(table.concat(out, "\n") .. "\n"); f:close()
end
local function log(k, v) out[#out + 1] = k .. "=" .. tostring(v); finish() end

local function severities(diags)
  local names = {}
  for _, d in ipairs(diags) do
    if d.code == "MLA001" then names[#names + 1] = vim.diagnostic.severity[d.severity] end
  end
  return table.concat(names, ",")
end

function Run()
  local ok_, err_ = pcall(Steps)
  if not ok_ then log("error", err_) end
  finish()
  vim.cmd("qall!")
end

function Steps()
  local buf = vim.api.nvim_get_current_buf()
  local ok = vim.wait(20000, function() return #vim.diagnostic.get(buf) >= 4 end, 50)
  local diags = vim.diagnostic.get(buf)
  log("filetype", vim.bo[buf].filetype)
  log("diagnostics_on_open", #vim.tbl_filter(function(d) return d.code == "MLA001" end, diags))
  log("severities_on_open", severities(diags))
  log("fix_all_command", vim.fn.exists(":MlirFixAll") == 2)
  local first = diags[1]
  for _, d in ipairs(diags) do if d.lnum < first.lnum then first = d end end
  -- :MlirDispatchGraph on the second gather's first assert (line 29): the server asks Neovim to
  -- open the viewer's URL (window/showDocument -> vim.ui.open, recorded here, not opened).
  local opened, notes = {}, {}
  vim.ui.open = function(uri) opened[#opened + 1] = uri; return nil, "recorded by the test" end
  local notify = vim.notify
  vim.notify = function(msg, level) notes[#notes + 1] = msg; return notify(msg, level) end
  vim.api.nvim_win_set_cursor(0, { 29, 4 })
  vim.cmd("MlirDispatchGraph")
  vim.wait(60000, function() return #opened > 0 and #notes > 0 end, 100)
  log("graph_opened", opened[1] or "")
  log("graph_notice", notes[#notes] or "")
  vim.notify = notify
  vim.api.nvim_win_set_cursor(0, { first.lnum + 1, first.col })
  local applied = false
  vim.lsp.buf.code_action({
    filter = function(a) return a.title:find("util.assume.int <umin", 1, true) ~= nil end,
    apply = true,
  })
  vim.wait(10000, function()
    applied = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n"):find("%assumed_5 = util.assume.int", 1, true) ~= nil
    return applied
  end, 50)
  log("applied", applied)
  vim.cmd("write")
  vim.wait(10000, function() return #vim.tbl_filter(function(d) return d.code == "MLA001" end, vim.diagnostic.get(buf)) == 2 end, 50)
  log("diagnostics_after_fix", #vim.tbl_filter(function(d) return d.code == "MLA001" end, vim.diagnostic.get(buf)))
  log("severities_after_fix", severities(vim.diagnostic.get(buf)))
  for _, c in ipairs(vim.lsp.get_clients({ bufnr = buf })) do
    c:stop()
  end
  local stopped = vim.wait(5000, function() return #vim.lsp.get_clients() == 0 end, 50)
  log("stopped", stopped)
end
