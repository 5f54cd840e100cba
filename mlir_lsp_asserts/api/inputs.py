"""What the API takes as `src`, turned into text: a path, MLIR text, bytes (text or bytecode), an
`iree.compiler.ir` Module or Operation, or an iree-turbine `ExportOutput` (through its MLIR
module). Nothing of IREE or turbine is imported here: objects are recognised by what they have."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any, Union

from ..errors import SourceError, UsageError
from ..source import BYTECODE_MAGIC, decode, read_source

# What `src` may be (a Module, Operation or ExportOutput is an object of IREE's or turbine's).
Src = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, Any]

SUFFIXES = (".mlir", ".mlirbc")


@dataclass(frozen=True)
class Input:
    text: str
    name: str  # the path, or <text>, <bytes>, <module>, <export>
    kind: str  # path, text, bytes, module, export
    path: str | None = None  # a file holding exactly `text` (compiled in place)
    is_bytecode: bool = False

    def where(self, message: str) -> str:
        """The message as the CLI prints it after `mlir-lsp: error: ` (a file's name first)."""
        return f"{self.name}: {message}" if self.kind == "path" else message


# Every MLIR op has one of these (`%x = op`, `op @name`, `module {}`, `"op"() : () -> ()`); a
# path seldom has any.
MLIR_CHARACTERS = frozenset('{}()%@="')
PATH_MAX = 4096


def is_path(s: str) -> bool:
    """Whether the API reads the str `s` as a path (else as MLIR text), the rule docs/python-api.md
    states: a path when a file (or folder) of that name exists; else MLIR text when it looks like
    MLIR (a line break, or one of `{ } ( ) % @ = "`) and is not one line ending in `.mlir` or
    `.mlirbc`; else a path (that is missing: SourceError)."""
    if len(s) < PATH_MAX and os.path.lexists(s):
        return True
    one_line = "\n" not in s and "\r" not in s
    if one_line and s.strip().endswith(SUFFIXES):
        return True
    return one_line and bool(s.strip()) and not MLIR_CHARACTERS.intersection(s)


def read_input(src: Src, *, weights: bool) -> Input:
    """`src` as text: with `weights` the whole text (for the compiler), else a file's IR part
    (its trailing resource section, the weights, located and not read). Raises SourceError."""
    if isinstance(src, os.PathLike) or isinstance(src, str) and is_path(src):
        path = os.fspath(src)
        try:
            s = read_source(path, weights=weights)
        except FileNotFoundError:
            raise SourceError(f"{path}: no such file or directory") from None
        except OSError as e:
            raise SourceError(f"{path}: {e.strerror or e}") from None
        except SourceError as e:
            raise SourceError(f"{path}: {e}") from None
        except ValueError as e:  # a NUL byte: no file can have that name
            raise SourceError(f"{path!r}: {e}") from None
        return Input(s.text, path, "path", None if s.is_bytecode or not weights else path, s.is_bytecode)
    if isinstance(src, str):
        return Input(src, "<text>", "text")
    if isinstance(src, (bytes, bytearray, memoryview)):
        data = bytes(src)
        return Input(decode(data, weights=weights).text, "<bytes>", "bytes",
                     is_bytecode=data.startswith(BYTECODE_MAGIC))
    export = _export_module(src)
    if export is not None:
        return Input(_asm(export), "<export>", "export")
    op = _operation(src)
    if op is not None:
        return Input(_asm(op), "<module>", "module")
    raise UsageError(f"cannot read a {type(src).__name__} as MLIR: give a path, text, bytes, an iree.compiler.ir "
                     "Module or Operation, or an iree-turbine ExportOutput")


def _export_module(src: Any) -> Any | None:
    """The MLIR module of an iree-turbine `ExportOutput` (turbine is looked at only when the
    caller has imported it)."""
    aot = sys.modules.get("iree.turbine.aot")
    cls = getattr(aot, "ExportOutput", None) if aot is not None else None
    if cls is not None and isinstance(src, cls) or type(src).__name__ == "ExportOutput":
        return getattr(src, "mlir_module", None)
    return None


def _operation(src: Any) -> Any | None:
    """The operation of an `ir.Module`, or `src` itself when it is an `ir.Operation` (or OpView)."""
    if hasattr(src, "operation") and hasattr(src.operation, "get_asm"):
        return src.operation
    return src if hasattr(src, "get_asm") else None


def _asm(op: Any) -> str:
    if hasattr(op, "operation") and hasattr(op.operation, "get_asm"):
        op = op.operation
    try:
        return op.get_asm(enable_debug_info=True)
    except Exception as e:  # noqa: BLE001 (an MLIR error: the object cannot be printed)
        raise SourceError(f"cannot print the module: {e}") from None
