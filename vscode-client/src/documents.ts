// Small facts about documents and settings that several features read.
import * as vscode from "vscode";

/** The settings section (`mlirLsp.*`) and the client's id. */
export const SECTION = "mlirLsp";

export function config(): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration(SECTION);
}

export function isMlir(doc: vscode.TextDocument | undefined): doc is vscode.TextDocument {
  return doc !== undefined && doc.languageId === "mlir" && (doc.uri.scheme === "file" || doc.uri.scheme === "untitled");
}

/** The active editor's MLIR document, or a warning that there is none. */
export function activeMlir(): vscode.TextDocument | undefined {
  const doc = vscode.window.activeTextEditor?.document;
  if (!isMlir(doc)) {
    void vscode.window.showWarningMessage("mlir-lsp: open an MLIR file first.");
    return undefined;
  }
  return doc;
}

/** A document's size in characters (bytes for ASCII IR), without copying its text. */
export function documentSize(doc: vscode.TextDocument): number {
  return doc.offsetAt(doc.lineAt(doc.lineCount - 1).range.end);
}

export function isBytecodeFile(uri: vscode.Uri | undefined): uri is vscode.Uri {
  return uri !== undefined && uri.scheme === "file" && uri.path.endsWith(".mlirbc");
}

export function baseName(uri: vscode.Uri): string {
  return uri.path.split("/").pop() ?? "document";
}

export function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
