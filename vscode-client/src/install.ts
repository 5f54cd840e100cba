// The offer to install the package into a Python found without it (the workspace's venv, the
// interpreter selected in the Python extension, mlirLsp.server.pythonPath): pip, with its output
// in the progress notification and the log. What is installed is mlirLsp.server.installSpec (a
// name, a pinned version, or a wheel file), so a team can pin one.
import { spawn } from "node:child_process";
import * as vscode from "vscode";
import { PythonLacking, ResolveEnv, lackingMessage, pipInstallArgs } from "./serverPath";
import { config } from "./documents";
import { log, showLog } from "./log";
import { pythonEnv } from "./pythonRun";

const declined = new Set<string>();
let offering = false;

export function installSpec(): string {
  return config().get<string>("server.installSpec", "").trim() || "mlir-lsp-asserts";
}

/** Runs pip; resolves to its exit code (null: stopped), with its lines in the log and the notification. */
function pip(python: string, args: string[], cwd: string | undefined, token: vscode.CancellationToken,
  progress: vscode.Progress<{ message?: string }>): Promise<number | null> {
  return new Promise((resolve) => {
    log(`[install] ${python} ${args.join(" ")}`);
    const child = spawn(python, args, { cwd, env: { ...pythonEnv(), PIP_NO_INPUT: "1" } });
    const onData = (chunk: Buffer): void => {
      for (const line of chunk.toString().split(/\r?\n/).filter((l) => l.trim() !== "")) {
        log(`[install] ${line}`);
        progress.report({ message: line.length > 100 ? `${line.slice(0, 100)}…` : line });
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    const stop = token.onCancellationRequested(() => child.kill());
    child.on("error", (e) => {
      log(`[install] ${e.message}`);
      stop.dispose();
      resolve(-1);
    });
    child.on("close", (code) => {
      stop.dispose();
      resolve(code);
    });
  });
}

/** Asks once per Python (a refusal is kept until the window reloads); true once the package is installed. */
export async function offerInstall(lacking: PythonLacking, env: ResolveEnv): Promise<boolean> {
  if (offering || declined.has(lacking.python)) {
    return false;
  }
  offering = true;
  try {
    const spec = installSpec();
    const message = lackingMessage(lacking, spec);
    log(message);
    const choice = await vscode.window.showWarningMessage(message, "Install", "Show Log", "Not Now");
    if (choice === "Show Log") {
      showLog();
    }
    if (choice !== "Install") {
      declined.add(lacking.python);
      return false;
    }
    const args = pipInstallArgs(spec, env);
    const code = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `mlir-lsp: installing ${spec}`, cancellable: true },
      (progress, token) => pip(lacking.python, args, env.workspaceFolder, token, progress),
    );
    if (code !== 0) {
      const msg = `mlir-lsp: pip install ${spec} into ${lacking.python} failed (${code === null ? "stopped" : `exit ${code}`}); see the log.`;
      log(msg);
      void vscode.window.showErrorMessage(msg, "Show Log").then((c) => c !== undefined && showLog());
      return false;
    }
    log(`[install] ${spec} installed into ${lacking.python}; starting the server`);
    return true;
  } finally {
    offering = false;
  }
}
