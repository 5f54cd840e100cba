"""What the server refuses, whatever a client or a workspace's settings ask.

- Programs: the server runs only the IREE compiler (and its own Python for the parser child),
  always as an argument list, never through a shell. The compiler path setting
  (`mlirLsp.dispatch.compilerPath`) is taken only when it is an absolute path to an existing
  file whose name starts with `iree-compile`, and that file is not inside a workspace folder:
  settings arrive merged from user and workspace (`.vscode/settings.json` of a cloned
  repository), so a repository cannot make the server run a program it ships. Otherwise the
  setting is ignored with a warning and the compiler found as without it (beside this package,
  else on PATH).
- Paths (checked here only): a request naming a file (`mlirLsp/dispatchCount`,
  `mlirLsp/bytecodeToText`, `mlirLsp/checkFromDisk`, `mlirLsp/fixOnDisk`) outside every workspace
  folder is refused with a message naming the path and the folders; with no workspace folder at
  all (a single file opened) nothing is refused. The one request that writes a user's file is
  `mlirLsp/fixOnDisk`, and never a document the client has open (disk_files_feature.py).
"""

from __future__ import annotations

import os

from .open_documents import uri_path
from .protocol import Server

COMPILER_PREFIX = "iree-compile"


def roots(ls) -> list[str]:
    try:
        folders = list(ls.workspace.folders.values())
        root = ls.workspace.root_path
    except RuntimeError:
        return []
    out = [uri_path(f.uri) for f in folders if uri_path(f.uri)]
    if not out and root:
        out = [root]
    return [os.path.realpath(r) for r in out if r and os.path.isdir(r)]


def outside_workspace(ls, path: str) -> str | None:
    """Why a request's path is refused (outside every workspace folder), or None if allowed.
    With no workspace folder (a single file opened), nothing is refused."""
    rs = roots(ls)
    if not rs:
        return None
    real = os.path.realpath(path)
    if any(real == r or real.startswith(r + os.sep) for r in rs):
        return None
    return f"refused: {path} is outside the workspace folders ({', '.join(rs)})"


def compiler_path_problem(ls: Server, value) -> str | None:
    """Why a compilerPath setting is refused, or None when it may be used (or is unset)."""
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        return f"dispatch.compilerPath must be a string, not {type(value).__name__}"
    if "\0" in value:
        return "dispatch.compilerPath must be a path, and a path has no NUL character"
    path = os.path.expanduser(value)
    if not os.path.isabs(path):
        return f"dispatch.compilerPath must be an absolute path ({value!r} is not)"
    if not os.path.basename(path).startswith(COMPILER_PREFIX):
        return f"dispatch.compilerPath must name an {COMPILER_PREFIX} binary, not {os.path.basename(path)!r}"
    real = os.path.realpath(path)
    if not os.path.isfile(real):
        return f"dispatch.compilerPath {value!r}: no such file"
    for root in _roots(ls):
        if real == root or real.startswith(root + os.sep) or path.startswith(root + os.sep):
            return (f"dispatch.compilerPath {value!r} is inside the workspace folder {root}; a workspace cannot "
                    "bring its own compiler (set it in the user settings to a compiler outside the workspace)")
    return None


def refuse_path(ls: Server, uri: str | None) -> str | None:
    """Why a request's document URI is refused (a file outside the workspace folders), or None."""
    if not isinstance(uri, str) or not uri.startswith("file:"):
        return None  # untitled: and other schemes name no file on disk
    path = uri_path(uri)
    if path is None:
        return f"not a file URI: {uri}"
    return outside_workspace(ls, path)


def _roots(ls: Server) -> list[str]:
    try:
        return roots(ls)
    except Exception:  # noqa: BLE001 - before initialize there is no workspace
        return []
