-- mlir-lsp for Neovim 0.11+ (vim.lsp.config / vim.lsp.enable), for an init.lua that `dofile`s it.
-- Use: `dofile("/path/to/mlir-lsp/editors/nvim/mlir_lsp.lua")` (keep lsp/ beside it: the config
-- table is lsp/mlir_lsp.lua, which also works alone with editors/nvim on 'runtimepath').
-- Set vim.g.mlir_lsp_cmd to the server command if `mlir-lsp` is not on PATH, e.g.
--   vim.g.mlir_lsp_cmd = { "/path/to/mlir-lsp/.venv/bin/mlir-lsp" }
-- and vim.g.mlir_lsp_settings to the settings (section mlirLsp), before this line.

vim.filetype.add({ extension = { mlir = "mlir", mlirbc = "mlirbc" } })

local here = debug.getinfo(1, "S").source:sub(2):match("^(.*)[/\\]") or "."
vim.lsp.config("mlir_lsp", dofile(here .. "/lsp/mlir_lsp.lua"))
vim.lsp.enable("mlir_lsp")
