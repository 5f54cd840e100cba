"""`make smoke`: `make dist`'s artifacts installed as users install them, then the smoke suite
(tests/smoke/smoke_installed.py) run against each install from a folder outside the checkout.

    python tests/smoke/run.py [--dist dist] [--iree 3.3.0 3.8.0 3.13.*] [--tools pipx uv] [--keep]

1. dist/ holds exactly the wheel, the sdist and the .vsix of one version (the package's
   `__version__`), named as users expect; the .vsix's manifest has that version.
2. The sdist's wheel (what `python -m build` put in dist/) holds the same files as a wheel built
   straight from the tree.
3. For each IREE release: a fresh venv, that iree-base-compiler installed first, then the wheel
   (pip must leave the compiler alone) and the test runner; the suite runs in it.
4. `pipx install` and `uv tool install` of the wheel (each taken from PATH, else installed into a
   tools venv here), each into folders of its own; the suite runs against that install.
Everything goes to a temporary folder (removed unless --keep); the installs run side by side
(--jobs), the suites one at a time; each step's time is printed.
Exit 0 when all passed, 1 when a step failed (the failures listed at the end).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SUITE = Path(__file__).resolve().parent
EXAMPLE = ROOT / "examples" / "hoisted_gather.mlir"
RUNNER_DEPS = ["pytest>=8", "pytest-lsp>=1.0.1", "pytest-asyncio>=0.23"]
PIP_QUIET = ["--quiet", "--disable-pip-version-check", "--no-input"]


def say(msg: str) -> None:
    print(f"== smoke: {msg}", flush=True)


def package_version() -> str:
    m = re.search(r'^__version__ = "([^"]+)"$', (ROOT / "mlir_lsp_asserts" / "__init__.py").read_text(), re.M)
    if m is None:
        raise SystemExit("error: no __version__ in mlir_lsp_asserts/__init__.py")
    return m.group(1)


def dist_files(dist: Path, version: str) -> tuple[Path, Path, Path]:
    """The wheel, sdist and .vsix of `version` in `dist`, which must hold nothing else."""
    want = [f"mlir_lsp_asserts-{version}-py3-none-any.whl", f"mlir_lsp_asserts-{version}.tar.gz",
            f"mlir-lsp-{version}.vsix"]
    have = sorted(p.name for p in dist.iterdir()) if dist.is_dir() else []
    if have != sorted(want):
        raise SystemExit(f"error: {dist} holds {have or 'nothing'}, not {sorted(want)} (run `make dist`)")
    wheel, sdist, vsix = (dist / n for n in want)
    with zipfile.ZipFile(vsix) as z:
        manifest = z.read("extension/package.json").decode("utf-8")
    m = re.search(r'"version"\s*:\s*"([^"]+)"', manifest)
    if m is None or m.group(1) != version:
        raise SystemExit(f"error: {vsix.name}'s package.json says version {m and m.group(1)}, not {version}")
    return wheel, sdist, vsix


def run(cmd: list, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in cmd], check=True, **kw)


def same_files_as_tree_wheel(wheel: Path, work: Path) -> str | None:
    """None when a wheel built from the tree holds the files of `wheel` (built from the sdist),
    else what differs."""
    out = work / "tree-wheel"
    run([sys.executable, "-m", "build", "--quiet", "--wheel", "--outdir", out, ROOT], stdout=subprocess.DEVNULL)
    (tree_wheel,) = out.glob("*.whl")
    names = {w: set(zipfile.ZipFile(w).namelist()) for w in (wheel, tree_wheel)}
    if names[wheel] == names[tree_wheel]:
        say(f"the sdist's wheel and the tree's wheel hold the same {len(names[wheel])} files")
        return None
    return (f"the sdist's wheel lacks {sorted(names[tree_wheel] - names[wheel])}, "
            f"has besides {sorted(names[wheel] - names[tree_wheel])}")


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "PYTHONSTARTUP")}
    env["PYTHONNOUSERSITE"] = "1"
    env.update(extra)
    return env


def suite(runner_python: Path, exe: Path, python: Path, iree: str, version: str, work: Path, name: str) -> bool:
    """The smoke suite run by `runner_python` against the install (`exe`, `python`), from a copy
    of tests/smoke outside the checkout. True when it passed."""
    where = work / f"suite-{name}"
    where.mkdir()
    shutil.copy(SUITE / "smoke_installed.py", where)
    shutil.copy(EXAMPLE, where)
    (where / "pytest.ini").write_text("[pytest]\npython_files = smoke_*.py\naddopts = -ra -p no:cacheprovider\n"
                                      "asyncio_default_fixture_loop_scope = function\n")
    env = clean_env(SMOKE_MLIR_LSP=str(exe), SMOKE_PYTHON=str(python), SMOKE_VERSION=version, SMOKE_IREE=iree,
                    SMOKE_CHECKOUT=str(ROOT), XDG_CACHE_HOME=str(work / f"cache-{name}"))
    p = subprocess.run([str(runner_python), "-m", "pytest", "-q", str(where)], cwd=where, env=env)
    return p.returncode == 0


def pinned_venv(work: Path, iree: str, wheel: Path) -> Path:
    """A fresh venv with iree-base-compiler `iree` installed first, then the wheel and the
    runner; its python. Raises RuntimeError when pip moved the compiler."""
    venv = work / f"venv-{iree.replace('*', 'x')}"
    run([sys.executable, "-m", "venv", venv])
    py = venv / "bin" / "python"
    env = clean_env()
    run([py, "-m", "pip", "install", *PIP_QUIET, f"iree-base-compiler=={iree}"], env=env)
    run([py, "-m", "pip", "install", *PIP_QUIET, wheel, *RUNNER_DEPS], env=env)
    got = subprocess.run([py, "-c", "from importlib.metadata import version; print(version('iree-base-compiler'))"],
                         capture_output=True, text=True, check=True).stdout.strip()
    if not re.fullmatch(re.escape(iree).replace(r"\*", ".*"), got):
        raise RuntimeError(f"pip moved iree-base-compiler from {iree} to {got}")
    return py


def tool(name: str, work: Path) -> Path:
    """`name` (pipx or uv) from PATH, else pip-installed into a venv of its own here."""
    found = shutil.which(name)
    if found:
        return Path(found)
    tools = work / f"tools-{name}"
    if not (tools / "bin" / "python").exists():
        run([sys.executable, "-m", "venv", tools])
    run([tools / "bin" / "python", "-m", "pip", "install", *PIP_QUIET, name], env=clean_env())
    return tools / "bin" / name


def tool_install(which: str, work: Path, wheel: Path) -> tuple[Path, Path]:
    """The wheel installed with `pipx install` or `uv tool install` into folders of their own:
    (its `mlir-lsp`, the Python of its venv)."""
    home, bindir = work / f"{which}-home", work / f"{which}-bin"
    exe = tool(which, work)
    if which == "pipx":
        env = clean_env(PIPX_HOME=str(home), PIPX_BIN_DIR=str(bindir), PIPX_MAN_DIR=str(work / "pipx-man"))
        run([exe, "install", wheel], env=env, stdout=subprocess.DEVNULL)
    else:
        env = clean_env(UV_TOOL_DIR=str(home), UV_TOOL_BIN_DIR=str(bindir), UV_CACHE_DIR=str(work / "uv-cache"),
                        UV_PYTHON=sys.executable, UV_NO_PROGRESS="1")
        cert = "/etc/ssl/certs/ca-certificates.crt"
        if os.path.exists(cert):  # the system's roots (a proxy's CA), as pip uses them here
            env.setdefault("SSL_CERT_FILE", cert)
        run([exe, "tool", "install", wheel], env=env, stdout=subprocess.DEVNULL)
    script = bindir / "mlir-lsp"
    head = script.read_text(encoding="utf-8", errors="replace").split("\n", 1)[0]
    python = Path(head.removeprefix("#!").strip()) if head.startswith("#!") else None
    if python is None or not python.exists():  # a symlink to the venv's own script
        python = script.resolve().parent / "python"
    return script, python


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dist", type=Path, default=ROOT / "dist")
    ap.add_argument("--iree", nargs="*", default=["3.3.0", "3.8.0", "3.13.*"],
                    help="iree-base-compiler releases, one fresh venv each (pip versions: 3.8.0, 3.13.*)")
    ap.add_argument("--tools", nargs="*", default=["pipx", "uv"], choices=["pipx", "uv"])
    ap.add_argument("--keep", action="store_true", help="keep the temporary folder (its path is printed)")
    ap.add_argument("-j", "--jobs", type=int, default=3, help="installs made side by side (default 3)")
    args = ap.parse_args(argv)
    version = package_version()
    wheel, _sdist, vsix = dist_files(args.dist.resolve(), version)
    say(f"{wheel.name}, {_sdist.name} and {vsix.name}: one version, {version}")
    work = Path(tempfile.mkdtemp(prefix="mlir-lsp-smoke-"))
    if work.resolve().is_relative_to(ROOT):
        raise SystemExit(f"error: the temporary folder {work} is inside the checkout")
    failed: list[str] = []
    timings: list[str] = []

    def step(name: str, fn, *fn_args) -> Any:
        start = time.monotonic()
        say(name)
        try:
            result = fn(*fn_args)
        except (subprocess.CalledProcessError, RuntimeError, OSError) as e:
            failed.append(f"{name}: {e}")
            result = None
        timings.append(f"{name}: {time.monotonic() - start:.0f} s")
        return result

    try:
        # the installs (downloads and unpacking, mostly) run side by side; each suite runs as soon
        # as its install is there, one suite at a time
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            venvs = [(iree, pool.submit(step, f"venv with iree-base-compiler=={iree}, then the wheel", pinned_venv,
                                        work, iree, wheel)) for iree in args.iree]
            tools = [(which, pool.submit(step, f"{which} install of the wheel", tool_install, which, work, wheel))
                     for which in args.tools]
            diff = step("sdist vs tree wheel", same_files_as_tree_wheel, wheel, work)
            if diff:
                failed.append(diff)
            runner = None
            for iree, pending in venvs:
                py = pending.result()
                if py is None:
                    continue
                runner = runner or py
                ok = step(f"suite beside IREE {iree}", suite, py, py.parent / "mlir-lsp", py, iree, version, work,
                          iree.replace("*", "x"))
                if not ok:
                    failed.append(f"the suite beside IREE {iree}")
            if tools and runner is None:  # the tool installs' suites need a runner with pytest
                runner = step("a venv for the test runner", pinned_venv, work, "3.13.*", wheel)
        for which, done in tools:
            got = done.result()
            if got is None or runner is None:
                continue
            exe, python = got
            ok = step(f"suite against the {which} install", suite, runner, exe, python, "3.13.*", version, work, which)
            if not ok:
                failed.append(f"the suite against the {which} install")
    finally:
        if args.keep:
            say(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    say("times: " + "; ".join(timings))
    if failed:
        for f in failed:
            print(f"smoke: FAILED: {f}", file=sys.stderr)
        return 1
    say("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
