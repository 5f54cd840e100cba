// The commands that act on a document through the server: the source actions (fix all, strip
// all, assume all), the dispatch-creation IR and the bytecode as text (read-only editors), the
// dispatch graph (Model Explorer, in the browser or a tab).
import * as vscode from "vscode";
import { CodeActionRequest, ExecuteCommandRequest } from "vscode-languageclient/node";
import { DiskFiles, tabUri } from "./diskFiles";
import { GraphAnswer, graphArguments, graphOutcome, openIn, viewerAddress } from "./dispatchGraph";
import { GraphPanel } from "./graphPanel";
import { activeMlir, baseName, config, errorText, isBytecodeFile } from "./documents";
import { log } from "./log";
import { ready, runningClient } from "./server";

const DISPATCH_IR_REQUEST = "mlirLsp/dispatchIR";
const BYTECODE_REQUEST = "mlirLsp/bytecodeToText";
// Commands the server registers (executeCommand); VS Code commands of the extension must not reuse these ids.
export const SERVER_DISPATCH_COMMAND = "mlirLsp.dispatchCount";
export const SERVER_DISPATCH_IR_COMMAND = "mlirLsp.showDispatchIR";
export const SERVER_DISPATCH_GRAPH_COMMAND = "mlirLsp.showDispatchGraph";
const DISPATCH_IR_SCHEME = "mlir-lsp-dispatch-ir";
const BYTECODE_SCHEME = "mlir-lsp-bytecode";
export const KINDS = {
  fixAll: "source.fixAll.mlir-lsp",
  stripAll: "source.mlir-lsp.stripAll",
  assumeAll: "source.mlir-lsp.assumeAll",
} as const;

const virtualDocs = new Map<string, string>();
let parts: { disk: DiskFiles; graphPanel: GraphPanel } | undefined;

/** The parts the commands use, and the read-only documents' schemes; once, at activation. */
export function registerDocumentViews(context: vscode.ExtensionContext, disk: DiskFiles, graphPanel: GraphPanel): void {
  parts = { disk, graphPanel };
  registerVirtualScheme(context, DISPATCH_IR_SCHEME);
  registerVirtualScheme(context, BYTECODE_SCHEME);
}

/** Fix all / strip all / assume all: the server's source action for the whole document, applied. */
export async function applySourceAction(kind: string): Promise<void> {
  const doc = activeMlir();
  const c = runningClient();
  if (doc === undefined || c === undefined) {
    return;
  }
  const end = doc.lineAt(doc.lineCount - 1).range.end;
  const actions = await c.sendRequest(CodeActionRequest.type, {
    textDocument: { uri: c.code2ProtocolConverter.asUri(doc.uri) },
    range: { start: { line: 0, character: 0 }, end: { line: end.line, character: end.character } },
    context: { diagnostics: [], only: [kind] },
  });
  const action = (actions ?? []).find((a) => "kind" in a && a.kind === kind);
  if (action === undefined || !("edit" in action) || action.edit === undefined) {
    void vscode.window.showInformationMessage("mlir-lsp: nothing to change.");
    return;
  }
  const edit = await c.protocol2CodeConverter.asWorkspaceEdit(action.edit);
  if (!(await vscode.workspace.applyEdit(edit))) {
    void vscode.window.showErrorMessage("mlir-lsp: the edit could not be applied (the file changed?).");
  }
}

/** Open a read-only virtual document with the given text as MLIR. */
async function showVirtual(scheme: string, name: string, source: vscode.Uri, text: string): Promise<void> {
  const uri = vscode.Uri.from({ scheme, path: "/" + name, query: source.toString() });
  virtualDocs.set(uri.toString(), text);
  providers.get(scheme)?.fire(uri);
  const doc = await vscode.workspace.openTextDocument(uri);
  await vscode.languages.setTextDocumentLanguage(doc, "mlir");
  await vscode.window.showTextDocument(doc, { preview: false });
}

const providers = new Map<string, vscode.EventEmitter<vscode.Uri>>();

function registerVirtualScheme(context: vscode.ExtensionContext, scheme: string): void {
  const changed = new vscode.EventEmitter<vscode.Uri>();
  providers.set(scheme, changed);
  context.subscriptions.push(changed, vscode.workspace.registerTextDocumentContentProvider(scheme, {
    onDidChange: changed.event,
    provideTextDocumentContent: (uri) => virtualDocs.get(uri.toString()) ?? "// mlir-lsp: run the command again to show this",
  }));
}

export async function showDispatchIR(target?: vscode.TextDocument): Promise<void> {
  const doc = target ?? activeMlir();
  const c = runningClient();
  if (doc === undefined || c === undefined) {
    return;
  }
  let result: { text?: string; path?: string | null; error?: string } | null;
  try {
    result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: "mlir-lsp: iree-compile to dispatch-creation" },
      () => c.sendRequest<{ text?: string; path?: string | null; error?: string } | null>(DISPATCH_IR_REQUEST, { uri: doc.uri.toString() }),
    );
  } catch (e) {
    void vscode.window.showErrorMessage(`mlir-lsp: show dispatch-creation IR: ${errorText(e)}`);
    return;
  }
  if (result === null || typeof result.text !== "string" || result.error !== undefined) {
    void vscode.window.showErrorMessage(`mlir-lsp: show dispatch-creation IR: ${result?.error ?? "no IR in the server's answer"}`);
    return;
  }
  await showVirtual(DISPATCH_IR_SCHEME, baseName(doc.uri).replace(/\.mlir$/, "") + ".dispatch-creation.mlir", doc.uri, result.text);
}

/** The dispatch graph of a document (default: the active editor's, with the op under the cursor
 * selected; or the active file checked from disk) in Model Explorer, opened in the browser or
 * (mlirLsp.dispatchGraph.openIn "editor") in a webview beside it. */
export async function showDispatchGraph(target?: vscode.Uri): Promise<void> {
  let uri = target;
  let line: number | undefined;
  if (uri === undefined) {
    uri = parts?.disk.active()?.uri;
  }
  if (uri === undefined) {
    const doc = activeMlir();
    if (doc === undefined) {
      return;
    }
    uri = doc.uri;
    line = vscode.window.activeTextEditor?.selection.active.line;
  }
  const c = runningClient();
  if (c === undefined) {
    return;
  }
  const key = uri.toString();
  let answer: GraphAnswer | null;
  try {
    answer = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: "mlir-lsp: dispatch graph (iree-compile, then Model Explorer)" },
      () => c.sendRequest(ExecuteCommandRequest.type, { command: SERVER_DISPATCH_GRAPH_COMMAND, arguments: [graphArguments(key, line)] }),
    ) as GraphAnswer | null;
  } catch (e) {
    void vscode.window.showErrorMessage(`mlir-lsp: dispatch graph: ${errorText(e)}`);
    return;
  }
  log(`[graph] ${uri.fsPath}: ${JSON.stringify(answer)}`);
  const outcome = graphOutcome(baseName(uri), answer);
  if (outcome.url === undefined) {
    if (answer?.error === undefined) {
      void vscode.window.showErrorMessage(outcome.message); // (the server shows its own errors)
    }
    return;
  }
  const external = (await vscode.env.asExternalUri(vscode.Uri.parse(outcome.url))).toString();
  const where = viewerAddress(outcome.url, external);
  const inEditor = openIn(config().get("dispatchGraph.openIn")) === "editor";
  if (inEditor || where.proxied) {
    if (where.proxied && !inEditor) {
      // openExternal would go through the same proxy: the raw URL in a tab (the webview's frame).
      log(`[graph] ${external} is a path proxy, which Model Explorer cannot run behind: ` +
        `shown in a tab at ${where.url} (reachable where the browser runs on the server's machine)`);
    }
    parts?.graphPanel.show(where.url, `Dispatch graph: ${baseName(uri)}`, { doc: uri, lines: answer?.lines ?? {} });
    void vscode.window.showInformationMessage(outcome.message);
    return;
  }
  const opened = await vscode.env.openExternal(vscode.Uri.parse(outcome.url)); // (it maps the port as asExternalUri did)
  log(`[graph] opened ${external}: ${opened}`);
  void vscode.window.showInformationMessage(opened ? outcome.message : `${outcome.message} (not opened: ${external})`);
}

export async function showBytecodeAsText(arg?: vscode.Uri): Promise<void> {
  let uri = arg instanceof vscode.Uri ? arg : tabUri(vscode.window.tabGroups.activeTabGroup.activeTab);
  if (!isBytecodeFile(uri)) {
    const picked = await vscode.window.showOpenDialog({ filters: { "MLIR bytecode": ["mlirbc"] }, canSelectMany: false });
    uri = picked?.[0];
  }
  await ready(); // a .mlirbc tab restored while the server starts
  const c = runningClient();
  if (uri === undefined || c === undefined) {
    return;
  }
  let result: { text?: string; error?: string } | null;
  try {
    result = await c.sendRequest<{ text?: string; error?: string } | null>(BYTECODE_REQUEST, { uri: uri.toString() });
  } catch (e) {
    void vscode.window.showErrorMessage(`mlir-lsp: bytecode as text: ${errorText(e)}`);
    return;
  }
  if (result === null || typeof result.text !== "string") {
    void vscode.window.showErrorMessage(`mlir-lsp: bytecode as text: ${result?.error ?? "no text in the server's answer"}`);
    return;
  }
  await showVirtual(BYTECODE_SCHEME, baseName(uri) + ".mlir", uri, result.text);
}
