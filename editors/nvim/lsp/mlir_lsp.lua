-- mlir-lsp as a Neovim 0.11+ LSP config, in the `lsp/<name>.lua` layout of nvim-lspconfig.
-- Use: put /path/to/mlir-lsp/editors/nvim on 'runtimepath', then `vim.lsp.enable("mlir_lsp")`;
-- change fields with vim.lsp.config("mlir_lsp", { cmd = {...}, settings = { mlirLsp = {...} } }).
-- editors/nvim/mlir_lsp.lua loads this same table for those who `dofile` it instead.
-- vim.g.mlir_lsp_cmd / vim.g.mlir_lsp_settings, when set, are the defaults of cmd / settings.

return {
  cmd = vim.g.mlir_lsp_cmd or { "mlir-lsp" },
  filetypes = { "mlir" },
  root_markers = { "mlir-lsp.toml", "pyproject.toml", ".git" },
  -- Section mlirLsp: select, ignore, severity, fixMode ("strip" | "assume"), dispatch, workspace
  -- (`mlir-lsp --show-settings` prints them all). Answered to workspace/configuration.
  settings = { mlirLsp = vim.g.mlir_lsp_settings or {} },
  -- The same settings as initializationOptions, so that the first findings already follow them.
  before_init = function(params, config)
    if params.initializationOptions == nil then
      params.initializationOptions = { mlirLsp = (config.settings or {}).mlirLsp }
    end
  end,
  on_attach = function(client, bufnr)
    -- Dispatch-count code lens (iree-compile for gfx942): refresh on open and save.
    vim.lsp.codelens.refresh({ bufnr = bufnr })
    vim.api.nvim_create_autocmd("BufWritePost", {
      buffer = bufnr,
      callback = function() vim.lsp.codelens.refresh({ bufnr = bufnr }) end,
    })
    -- :MlirDispatchCount runs the custom request and shows the counts.
    vim.api.nvim_buf_create_user_command(bufnr, "MlirDispatchCount", function()
      client:request("mlirLsp/dispatchCount", { uri = vim.uri_from_bufnr(bufnr) }, function(err, res)
        if err or res.error then
          vim.notify("mlir-lsp: " .. vim.inspect(err or res.error), vim.log.levels.ERROR)
          return
        end
        local msg = res.flow_dispatches .. " dispatches"
        if res.what_if ~= vim.NIL and res.what_if then
          msg = msg .. ", " .. res.what_if.flow_dispatches .. " with the asserts removed"
        end
        vim.notify("mlir-lsp: " .. msg)
      end, bufnr)
    end, {})
    -- :MlirDispatchGraph: the dispatch graph in Model Explorer (pip install 'mlir-lsp[graph]'),
    -- the dispatch of the op under the cursor selected; the server asks Neovim to open the URL
    -- (window/showDocument, vim.ui.open) and shows its errors itself.
    vim.api.nvim_buf_create_user_command(bufnr, "MlirDispatchGraph", function()
      local args = { uri = vim.uri_from_bufnr(bufnr), line = vim.api.nvim_win_get_cursor(0)[1] - 1 }
      client:request("workspace/executeCommand", { command = "mlirLsp.showDispatchGraph", arguments = { args } },
        function(err, res)
          if err then
            vim.notify("mlir-lsp: " .. vim.inspect(err), vim.log.levels.ERROR)
          elseif res and res.url then
            vim.notify("mlir-lsp: dispatch graph (" .. res.dispatches .. " dispatches): " .. res.url)
          end
        end, bufnr)
    end, {})
    -- :MlirFixAll applies the safe fixes (source.fixAll.mlir-lsp).
    vim.api.nvim_buf_create_user_command(bufnr, "MlirFixAll", function()
      vim.lsp.buf.code_action({ context = { only = { "source.fixAll.mlir-lsp" }, diagnostics = {} }, apply = true })
    end, {})
  end,
}
