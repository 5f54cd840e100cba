// The extension's one logger: the 'mlir-lsp' output channel. The language client writes its own
// lines (and the LSP trace, mlirLsp.trace.server) to the same channel.
import * as vscode from "vscode";

let channel: vscode.OutputChannel | undefined;

/** Made once, at activation (disposed with the extension). */
export function createOutput(): vscode.OutputChannel {
  channel = vscode.window.createOutputChannel("mlir-lsp");
  return channel;
}

export function output(): vscode.OutputChannel {
  if (channel === undefined) {
    throw new Error("mlir-lsp: the output channel is made at activation");
  }
  return channel;
}

export function log(line: string): void {
  channel?.appendLine(line);
}

export function showLog(): void {
  channel?.show();
}
