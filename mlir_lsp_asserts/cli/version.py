"""`mlir-lsp --version`: what a bug report needs first. The package's version, the `iree-compile`
a dispatch count would run (found as the count finds it: `--compiler`, else beside this Python,
else PATH; its release from its own `--version`, cached per binary; nothing is compiled), the
release of the iree-base-compiler bindings in this Python, and the Python itself.

    mlir-lsp 0.1.0
    iree-compile: /venv/lib/python3.11/site-packages/iree/compiler/_mlir_libs/iree-compile (3.13.0rc20261016)
    iree-base-compiler (bindings): 3.13.0
    python: 3.11.2 (/venv/bin/python3)

No compiler found is a line (`iree-compile: not found (...)`), never a traceback; exit 0.
"""

from __future__ import annotations

import sys

from .. import __version__


def version_lines(compiler_setting: str | None = None) -> list[str]:
    from ..dispatch.compiler_lookup import CompilerError, find_compiler
    from ..iree_release import bindings_release

    try:
        found = find_compiler(compiler_setting)
        compiler = f"{found.path} ({found.version})"
    except CompilerError as e:  # not found, too old, or no version: the reason, on one line
        text = str(e)
        compiler = text if text.startswith("iree-compile not found") else f"unusable: {text}"
        compiler = compiler.removeprefix("iree-compile ")
    bindings = bindings_release()
    return [f"mlir-lsp {__version__}",
            f"iree-compile: {compiler}",
            f"iree-base-compiler (bindings): {bindings if bindings is not None else 'not installed'}",
            f"python: {sys.version.split()[0]} ({sys.executable})"]


def print_version(compiler_setting: str | None = None) -> int:
    print("\n".join(version_lines(compiler_setting)))
    return 0
