// How the extension runs a Python it found (the workspace's venv, the selected interpreter,
// mlirLsp.server.pythonPath): the check that it can import the package, here; the server and pip
// take `pythonEnv()`. Pure of vscode, so node's test runner covers it.
import { execFile } from "node:child_process";

/** The environment of a Python run by the extension: PYTHONSAFEPATH (Python 3.11+, which the
 * package needs) keeps the current folder off sys.path. The server and the checks run in the
 * workspace folder, and `python -c`/`python -m` put that folder first: a folder holding
 * `mlir_lsp_asserts/` (or `pip/`) would have its own code imported and run instead of the
 * installed package, in Restricted Mode too. */
export function pythonEnv(base: NodeJS.ProcessEnv = process.env): NodeJS.ProcessEnv {
  return { ...base, PYTHONSAFEPATH: "1" };
}

/** Whether `python` can import mlir_lsp_asserts, asked from `cwd` (the folder the server runs in).
 * A child process awaited, not run synchronously: the extension host keeps serving. */
export function canImportPackage(python: string, cwd: string): Promise<boolean> {
  return new Promise((resolve) => {
    execFile(python, ["-c", "import mlir_lsp_asserts"], { timeout: 20000, cwd, env: pythonEnv() },
      (err) => resolve(err === null));
  });
}
