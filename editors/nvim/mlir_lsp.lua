-- mlir-lsp for Neovim 0.11+ (vim.lsp.config / vim.lsp.enable).
-- Use: add `dofile("/path/to/mlir-lsp/editors/nvim/mlir_lsp.lua")` to your init.lua, or copy it.
-- Set vim.g.mlir_lsp_cmd to the server command if `mlir-lsp` is not on PATH, e.g.
--   vim.g.mlir_lsp_cmd = { "/path/to/mlir-lsp/.venv/bin/mlir-lsp" }

vim.filetype.add({ extension = { mlir = "mlir", mlirbc = "mlirbc" } })

vim.lsp.config("mlir_lsp", {
  cmd = vim.g.mlir_lsp_cmd or { "mlir-lsp" },
  filetypes = { "mlir" },
  root_markers = { "mlir-lsp.toml", "pyproject.toml", ".git" },
  -- Settings (section mlirLsp): select, ignore, severity, fixMode ("strip" | "assume").
  init_options = { mlirLsp = vim.g.mlir_lsp_settings or {} },
  settings = { mlirLsp = vim.g.mlir_lsp_settings or {} },
})
vim.lsp.enable("mlir_lsp")

vim.api.nvim_create_autocmd("LspAttach", {
  callback = function(ev)
    local client = vim.lsp.get_client_by_id(ev.data.client_id)
    if not client or client.name ~= "mlir_lsp" then
      return
    end
    -- Dispatch-count code lens (iree-compile for gfx942): refresh on open and save.
    vim.lsp.codelens.refresh({ bufnr = ev.buf })
    vim.api.nvim_create_autocmd("BufWritePost", {
      buffer = ev.buf,
      callback = function() vim.lsp.codelens.refresh({ bufnr = ev.buf }) end,
    })
    -- :MlirDispatchCount runs the custom request and shows the counts.
    vim.api.nvim_buf_create_user_command(ev.buf, "MlirDispatchCount", function()
      client:request("mlirLsp/dispatchCount", { uri = vim.uri_from_bufnr(ev.buf) }, function(err, res)
        if err or res.error then
          vim.notify("mlir-lsp: " .. vim.inspect(err or res.error), vim.log.levels.ERROR)
          return
        end
        local msg = res.flow_dispatches .. " dispatches"
        if res.what_if ~= vim.NIL and res.what_if then
          msg = msg .. ", " .. res.what_if.flow_dispatches .. " with the asserts removed"
        end
        vim.notify("mlir-lsp: " .. msg)
      end, ev.buf)
    end, {})
    -- :MlirFixAll applies the safe fixes (source.fixAll.mlir-lsp).
    vim.api.nvim_buf_create_user_command(ev.buf, "MlirFixAll", function()
      vim.lsp.buf.code_action({ context = { only = { "source.fixAll.mlir-lsp" }, diagnostics = {} }, apply = true })
    end, {})
  end,
})
