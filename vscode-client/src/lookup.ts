// Where the server comes from, as the extension sees it: serverPath.ts's steps with VS Code's
// answers (the settings, the Python extension's interpreter, the workspace folders, trust), each
// step in the log; then what the user is told when none is found (a Python that lacks the
// package gets the install offer; in Restricted Mode, why the extension waits).
import * as fs from "node:fs";
import * as os from "node:os";
import * as vscode from "vscode";
import { ResolveEnv, ServerCommand, expandVariables, notFoundMessage, resolveServer, waitingMessage } from "./serverPath";
import { config } from "./documents";
import { offerInstall } from "./install";
import { log, showLog } from "./log";
import { canImportPackage } from "./pythonRun";
import { selectedInterpreter } from "./python";

export function resolveEnv(): ResolveEnv {
  const folders = vscode.workspace.workspaceFolders ?? [];
  const workspaceFolder = folders[0]?.uri.fsPath;
  return {
    workspaceFolder,
    home: os.homedir(),
    env: process.env,
    platform: process.platform,
    isExecutable(p: string): boolean {
      try {
        fs.accessSync(p, fs.constants.X_OK);
        return fs.statSync(p).isFile();
      } catch {
        return false;
      }
    },
    canImport: (python: string): Promise<boolean> => canImportPackage(python, workspaceFolder ?? os.homedir()),
    interpreter: () => selectedInterpreter(folders[0]?.uri),
    venvFolders: folders.filter((f) => f.uri.scheme === "file").map((f) => f.uri.fsPath),
    trusted: vscode.workspace.isTrusted,
  };
}

/** A path setting with its variables expanded (the server's compilerPath). */
export function expandPath(p: string): string {
  return expandVariables(p, resolveEnv());
}

let toldWaiting = false;

/** The server to start, or why there is none (the user was told). `restart` starts the server
 * again (after an install). */
export async function findServer(restart: () => void): Promise<ServerCommand | { missing: string }> {
  const cfg = config();
  const env = resolveEnv();
  const resolution = await resolveServer(
    { path: cfg.get<string>("server.path", ""), pythonPath: cfg.get<string>("server.pythonPath", "") }, env);
  for (const t of resolution.tried) {
    log(`[server lookup] ${t}`);
  }
  if (resolution.ok) {
    return resolution.server;
  }
  if (resolution.waiting.length > 0) {
    const msg = waitingMessage(resolution.waiting);
    log(msg);
    if (!toldWaiting) {
      toldWaiting = true;
      void vscode.window.showInformationMessage(msg, "Manage Workspace Trust", "Show Log").then((choice) => {
        if (choice === "Manage Workspace Trust") {
          void vscode.commands.executeCommand("workbench.trust.manage");
        } else if (choice === "Show Log") {
          showLog();
        }
      });
    }
    return { missing: "waiting for the folder to be trusted" };
  }
  if (resolution.lacking !== undefined) {
    void offerInstall(resolution.lacking, env).then((installed) => installed && restart());
    return { missing: `${resolution.lacking.source} lacks the package` };
  }
  const msg = notFoundMessage(resolution.tried);
  log(msg);
  void vscode.window.showErrorMessage(msg, "Open Settings", "Show Log").then((choice) => {
    if (choice === "Open Settings") {
      void vscode.commands.executeCommand("workbench.action.openSettings", "mlirLsp.server");
    } else if (choice === "Show Log") {
      showLog();
    }
  });
  return { missing: "not found" };
}
