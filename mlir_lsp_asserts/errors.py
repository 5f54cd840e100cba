"""The package's own errors: each message is one line saying why, the line the CLI prints after
`mlir-lsp: error: `. `MlirLspError` is the base the Python API's users catch."""

from __future__ import annotations


class MlirLspError(Exception):
    """Base of every error mlir-lsp raises to a caller of its Python API."""


class SourceError(MlirLspError):
    """The input cannot be checked; the message says why in one line."""


class FixError(MlirLspError):
    """A fix that cannot be applied (e.g. the real parser rejects the fixed text); nothing written."""


class CompileError(MlirLspError):
    """`iree-compile` gave no result (not found, failed, timed out, cancelled).
    `diagnostics`: the compiler's own errors, as `dispatch.compiler.parse_diagnostics` gives them."""

    def __init__(self, message: str, diagnostics: list[dict] | None = None):
        super().__init__(message)
        self.diagnostics = diagnostics or []


class UsageError(MlirLspError, ValueError):
    """An argument the API cannot use (an unknown profile or fix mode, an input of no known kind)."""
