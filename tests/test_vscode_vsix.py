"""The packaged VS Code extension (vscode-client/mlir-lsp.vsix, built by `make vscode-setup`):
what a user installs is one bundled script (esbuild), small, that needs nothing at run time
but VS Code and node's own modules. tests/test_vscode_e2e.py installs and drives this .vsix."""

from __future__ import annotations

import json
import re
import subprocess
import zipfile

import pytest

from tests.test_vscode_e2e import NODE24_BIN, VSIX, require

pytestmark = [pytest.mark.vscode, pytest.mark.e2e]

BUNDLE = "extension/dist/extension.js"
MAX_BYTES = 150_000  # ~100 KB bundled, +25 KB the icon; the unbundled .vsix (node_modules, 171 .js files) was 324 KB


def test_vsix_is_one_small_bundle():
    require({"the .vsix (make vscode-setup)": VSIX, "node 24 (make vscode-setup)": NODE24_BIN / "node"})
    with zipfile.ZipFile(VSIX) as z:
        names = set(z.namelist())
        assert [n for n in names if n.endswith(".js")] == [BUNDLE], sorted(names)
        assert names == {"[Content_Types].xml", "extension.vsixmanifest", "extension/package.json",
                         "extension/readme.md", "extension/language-configuration.json", BUNDLE,
                         "extension/images/icon.png"}, sorted(names)
        manifest = json.loads(z.read("extension/package.json"))
        bundle = z.read(BUNDLE).decode()
        icon = z.read("extension/" + manifest["icon"])
    # The icon: a PNG of at least 128x128 (the Marketplace's size).
    assert icon[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(icon[16:20], "big"), int.from_bytes(icon[20:24], "big")
    assert width >= 128 and height >= 128, (width, height)
    assert "extension/" + manifest["main"].removeprefix("./") == BUNDLE
    assert VSIX.stat().st_size < MAX_BYTES, f"{VSIX.stat().st_size} bytes"
    # Everything else is inside the bundle: it loads only `vscode` and node's built-in modules.
    builtins = set(json.loads(subprocess.run(
        [str(NODE24_BIN / "node"), "-p", "JSON.stringify(require('module').builtinModules)"],
        capture_output=True, text=True, check=True).stdout))
    loaded = set(re.findall(r'require\("([^"]+)"\)', bundle))
    assert "vscode" in loaded
    assert {m for m in loaded - {"vscode"} if m.removeprefix("node:") not in builtins} == set(), loaded
