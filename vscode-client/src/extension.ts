// The mlir-lsp VS Code extension: wiring only. One language client for the workspace (server.ts,
// found by lookup.ts), the status bar's dispatch count (status.ts), files checked from disk
// (diskFiles.ts), the commands (commands.ts), the log (log.ts).
import * as vscode from "vscode";
import {
  KINDS, SERVER_DISPATCH_COMMAND, SERVER_DISPATCH_GRAPH_COMMAND, SERVER_DISPATCH_IR_COMMAND,
  applySourceAction, registerDocumentViews, showBytecodeAsText, showDispatchGraph, showDispatchIR,
} from "./commands";
import { DiskFiles, tabUri } from "./diskFiles";
import { FixMode } from "./diskStatus";
import { SECTION, activeMlir, config, isBytecodeFile } from "./documents";
import { GraphPanel } from "./graphPanel";
import { createOutput, log, showLog } from "./log";
import { onInterpreterChange } from "./python";
import { createSession, currentClient, ready, restart, serverSource, stopServer } from "./server";
import { DISPATCH_REQUEST, DispatchStatus, ServerStatus } from "./status";

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const output = createOutput();
  const status = new DispatchStatus(currentClient);
  const disk = new DiskFiles({
    client: currentClient,
    ready,
    output,
    dispatchRequest: DISPATCH_REQUEST,
    profile: () => config().get<string>("dispatch.profile", "default"),
  });
  const graphPanel = new GraphPanel(output);
  const serverStatus = new ServerStatus();
  context.subscriptions.push(output, status, disk, graphPanel, serverStatus);
  registerDocumentViews(context, disk, graphPanel);
  context.subscriptions.push(createSession({
    counted: (p) => status.accept(p),
    state: (text, ok) => serverStatus.show(text, ok),
    running: () => {
      status.refresh();
      disk.recheckAll();
      disk.scan();
    },
    // The code lenses' commands: the count goes through the status bar (both show the same
    // count), the IR opens in a read-only editor, the graph in the browser or a tab.
    executeCommand: (command, args) => {
      const uri = typeof args[0] === "string" ? vscode.Uri.parse(args[0]) : vscode.window.activeTextEditor?.document.uri;
      const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri?.toString());
      if (command === SERVER_DISPATCH_COMMAND && doc !== undefined) {
        return status.compute(doc);
      }
      if (command === SERVER_DISPATCH_IR_COMMAND && doc !== undefined) {
        return showDispatchIR(doc);
      }
      if (command === SERVER_DISPATCH_GRAPH_COMMAND) {
        // The lens's argument is {uri}: the graph opens in the browser from here (openExternal).
        const arg = args[0] as { uri?: unknown } | undefined;
        return showDispatchGraph(typeof arg?.uri === "string" ? vscode.Uri.parse(arg.uri) : uri);
      }
      return undefined;
    },
  }));
  /** Stop the server (awaited) and start it again, the count shown forgotten. */
  const restartServer = async (why?: string): Promise<void> => {
    if (why !== undefined) {
      log(`[server] ${why}; restarting the server`);
    }
    status.clear();
    await restart();
  };
  const command = (name: string, fn: (...args: never[]) => Promise<void> | void): void => {
    context.subscriptions.push(vscode.commands.registerCommand(name, fn));
  };
  command("mlirLsp.restart", () => restartServer());
  command("mlirLsp.showLog", () => showLog());
  command("mlirLsp.fixAll", () => applySourceAction(KINDS.fixAll));
  command("mlirLsp.stripAll", () => applySourceAction(KINDS.stripAll));
  command("mlirLsp.assumeAll", () => applySourceAction(KINDS.assumeAll));
  command("mlirLsp.recomputeDispatchCount", async () => {
    if (disk.active() !== undefined) {
      await disk.count();
      return;
    }
    const doc = activeMlir();
    if (doc !== undefined) {
      await status.compute(doc);
    }
  });
  command("mlirLsp.openDispatchIR", () => showDispatchIR());
  command("mlirLsp.openDispatchGraph", () => showDispatchGraph());
  // Files VS Code does not sync (above 50 MB), checked and fixed on disk by the server; on a
  // synced document the fix commands apply the editor's strip all / assume all instead.
  const fixOnDisk = async (mode: FixMode, arg?: unknown): Promise<void> => {
    if (!(await disk.fix(mode, arg))) {
      await applySourceAction(mode === "strip" ? KINDS.stripAll : KINDS.assumeAll);
    }
  };
  command("mlirLsp.fixOnDiskStrip", (arg?: unknown) => fixOnDisk("strip", arg));
  command("mlirLsp.fixOnDiskAssume", (arg?: unknown) => fixOnDisk("assume", arg));
  command("mlirLsp.checkFromDisk", async (arg?: unknown) => {
    if (!(await disk.recheck(arg))) {
      void vscode.window.showInformationMessage("mlir-lsp: the active editor's file is not above VS Code's 50 MB sync " +
        "limit: the server has its text, and its findings come from there.");
    }
  });
  command("mlirLsp.diskFileActions", () => disk.menu());
  command("mlirLsp.showBytecodeAsText", showBytecodeAsText);
  // A .mlirbc file opened in an editor gets its text view beside it, through the server.
  context.subscriptions.push(vscode.window.tabGroups.onDidChangeTabs((e) => {
    if (!config().get<boolean>("bytecode.openAsText", true)) {
      return;
    }
    for (const uri of e.opened.map(tabUri).filter(isBytecodeFile)) {
      void showBytecodeAsText(uri);
    }
  }));
  context.subscriptions.push(vscode.workspace.onDidChangeConfiguration((e) => {
    if (e.affectsConfiguration(`${SECTION}.server`)) {
      void restartServer("mlirLsp.server changed");
    }
  }));
  // Trusted now: the folder's own server, compiler and flags settings apply, its venv and
  // interpreter may run (a new server).
  context.subscriptions.push(vscode.workspace.onDidGrantWorkspaceTrust(() => {
    void restartServer("the folder is trusted now: its settings, venv and interpreter apply");
  }));
  // Another interpreter selected in the Python extension: a server found after the settings may
  // come from elsewhere now.
  context.subscriptions.push(onInterpreterChange((path) => {
    const from = serverSource();
    if (from !== "mlirLsp.server.path" && from !== "mlirLsp.server.pythonPath") {
      void restartServer(`the Python extension selected ${path}`);
    }
  }));
  await restart();
  disk.scan();
}

export async function deactivate(): Promise<void> {
  await stopServer();
}
