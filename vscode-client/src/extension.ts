// The mlir-lsp VS Code extension: one language client for the workspace, the status bar's
// dispatch count, and commands for the server's source actions and custom requests.
import * as fs from "node:fs";
import * as os from "node:os";
import { execFile } from "node:child_process";
import * as vscode from "vscode";
import {
  CloseAction,
  CodeActionRequest,
  DidChangeConfigurationNotification,
  DocumentDiagnosticRequest,
  ErrorAction,
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  State,
} from "vscode-languageclient/node";
import { DispatchResult, computingView, idleView, resultView } from "./dispatchStatus";
import { DiskFiles, tabUri } from "./diskFiles";
import { GraphAnswer, graphArguments, graphOutcome, openIn, viewerAddress } from "./dispatchGraph";
import { GraphPanel } from "./graphPanel";
import { FixMode, autoCountAllowed, onRequestView } from "./diskStatus";
import { RestartPolicy } from "./restartPolicy";
import { ResolveEnv, expandVariables, notFoundMessage, resolveServer } from "./serverPath";
import { RESTRICTED_SETTINGS, restrictedNote } from "./restricted";
import { Session } from "./session";
import { JsonObject, serverSettings } from "./settings";

const SECTION = "mlirLsp";
const DISPATCH_REQUEST = "mlirLsp/dispatchCount";
const DISPATCH_IR_REQUEST = "mlirLsp/dispatchIR";
const BYTECODE_REQUEST = "mlirLsp/bytecodeToText";
// The server's word that a count finished (the ones it schedules on open, save and idle too).
const COUNTED_NOTIFICATION = "mlirLsp/dispatchCounted";
// Commands the server registers (executeCommand); VS Code commands of the extension must not reuse these ids.
const SERVER_DISPATCH_COMMAND = "mlirLsp.dispatchCount";
const SERVER_DISPATCH_IR_COMMAND = "mlirLsp.showDispatchIR";
const SERVER_DISPATCH_GRAPH_COMMAND = "mlirLsp.showDispatchGraph";
const DISPATCH_IR_SCHEME = "mlir-lsp-dispatch-ir";
const BYTECODE_SCHEME = "mlir-lsp-bytecode";
export const KINDS = {
  fixAll: "source.fixAll.mlir-lsp",
  stripAll: "source.mlir-lsp.stripAll",
  assumeAll: "source.mlir-lsp.assumeAll",
} as const;

let session: Session<LanguageClient>;
let starting: Promise<void> | undefined;
let output: vscode.OutputChannel;
let status: DispatchStatus;
let disk: DiskFiles;
let graphPanel: GraphPanel;
const virtualDocs = new Map<string, string>();

function resolveEnv(): ResolveEnv {
  return {
    workspaceFolder: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath,
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
    canImport(python: string): Promise<boolean> {
      // A child process awaited, not run synchronously: the extension host keeps serving.
      return new Promise((resolve) => {
        execFile(python, ["-c", "import mlir_lsp_asserts"], { timeout: 20000 }, (err) => resolve(err === null));
      });
    },
  };
}

function currentSettings(): JsonObject {
  const env = resolveEnv();
  return serverSettings(vscode.workspace.getConfiguration().get(SECTION), (p) => expandVariables(p, env));
}

function isMlir(doc: vscode.TextDocument | undefined): doc is vscode.TextDocument {
  return doc !== undefined && doc.languageId === "mlir" && (doc.uri.scheme === "file" || doc.uri.scheme === "untitled");
}

/** The running client (undefined while none, or between a stop and the next start). */
function currentClient(): LanguageClient | undefined {
  return session?.client;
}

async function startClient(adopt: (c: LanguageClient) => void): Promise<void> {
  const cfg = vscode.workspace.getConfiguration(SECTION);
  const resolution = await resolveServer(
    { path: cfg.get<string>("server.path", ""), pythonPath: cfg.get<string>("server.pythonPath", "") },
    resolveEnv(),
  );
  for (const t of resolution.tried) {
    output.appendLine(`[server lookup] ${t}`);
  }
  if (!resolution.ok) {
    const msg = notFoundMessage(resolution.tried);
    output.appendLine(msg);
    void vscode.window.showErrorMessage(msg, "Open Settings", "Show Log").then((choice) => {
      if (choice === "Open Settings") {
        void vscode.commands.executeCommand("workbench.action.openSettings", "mlirLsp.server");
      } else if (choice === "Show Log") {
        output.show();
      }
    });
    return;
  }
  const { server } = resolution;
  output.appendLine(`[server] ${server.command} ${server.args.join(" ")} (from ${server.source})`);
  const serverOptions: ServerOptions = {
    command: server.command,
    args: server.args,
    options: { cwd: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? os.homedir() },
  };
  const policy = new RestartPolicy(cfg.get<number>("server.maxRestarts", 5));
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: "file", language: "mlir" },
      { scheme: "untitled", language: "mlir" },
    ],
    outputChannel: output,
    initializationOptions: { [SECTION]: currentSettings() },
    synchronize: { configurationSection: SECTION },
    errorHandler: {
      error: (_error, _message, count) => ({ action: (count ?? 0) <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown }),
      closed: () => {
        if (policy.shouldRestart(Date.now())) {
          output.appendLine("[server] the server stopped; restarting it");
          return { action: CloseAction.Restart };
        }
        return {
          action: CloseAction.DoNotRestart,
          message: "mlir-lsp: the server crashed too often in the last 3 minutes and is not restarted; " +
            "see the 'mlir-lsp' output, then run 'mlir-lsp: Restart the language server'.",
        };
      },
    },
    middleware: {
      workspace: {
        // The server gets the section mapped (client keys dropped, paths expanded), both
        // pushed on change and when it asks with workspace/configuration.
        didChangeConfiguration: async () => {
          await currentClient()?.sendNotification(DidChangeConfigurationNotification.type, { settings: { [SECTION]: currentSettings() } });
          repullDiagnostics();
        },
        configuration: (params, token, next) => {
          const mine = params.items.map((item) => item.section === SECTION);
          if (!mine.some((m) => m)) {
            return next(params, token);
          }
          return params.items.map((item): unknown => (item.section === SECTION ? currentSettings() : vscode.workspace.getConfiguration().get<unknown>(item.section ?? "") ?? null));
        },
      },
      // The code lenses' commands: the count goes through the status bar (both show the same
      // count), the IR opens in a read-only editor.
      executeCommand: async (command, args: unknown[], next): Promise<unknown> => {
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
        return (await next(command, args)) as unknown;
      },
    },
  };
  const client = new LanguageClient(SECTION, "mlir-lsp", serverOptions, clientOptions);
  adopt(client);
  client.onNotification(COUNTED_NOTIFICATION, (p: DispatchResult & { uri?: string }) => status.accept(p));
  client.onDidChangeState((e) => {
    if (e.newState === State.Running) {
      status.refresh();
      disk.recheckAll();
      disk.scan();
    }
  });
  try {
    starting = client.start();
    await starting;
  } catch (e) {
    const msg = `mlir-lsp: the server (${server.command} ${server.args.join(" ")}, from ${server.source}) did not start: ${String(e)}`;
    output.appendLine(msg);
    void vscode.window.showErrorMessage(msg, "Show Log").then((c) => c !== undefined && output.show());
  }
}

/** Settings change what the server reports: pull the open documents' diagnostics again. */
function repullDiagnostics(): void {
  const feature = currentClient()?.getFeature(DocumentDiagnosticRequest.method);
  for (const doc of vscode.workspace.textDocuments.filter(isMlir)) {
    feature?.getProvider(doc)?.onDidChangeDiagnosticsEmitter.fire();
  }
}

/** Stop the server (awaited) and start it again; restarts that overlap never make two. */
async function restart(): Promise<void> {
  status.clear();
  await session.restart();
}

function runningClient(): LanguageClient | undefined {
  const client = currentClient();
  if (client === undefined || !client.isRunning()) {
    void vscode.window.showErrorMessage("mlir-lsp: the language server is not running (see the 'mlir-lsp' output).");
    return undefined;
  }
  return client;
}

function activeMlir(): vscode.TextDocument | undefined {
  const doc = vscode.window.activeTextEditor?.document;
  if (!isMlir(doc)) {
    void vscode.window.showWarningMessage("mlir-lsp: open an MLIR file first.");
    return undefined;
  }
  return doc;
}

/** Fix all / strip all / assume all: the server's source action for the whole document, applied. */
async function applySourceAction(kind: string): Promise<void> {
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

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
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

function baseName(uri: vscode.Uri): string {
  return uri.path.split("/").pop() ?? "document";
}

async function showDispatchIR(target?: vscode.TextDocument): Promise<void> {
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
async function showDispatchGraph(target?: vscode.Uri): Promise<void> {
  let uri = target;
  let line: number | undefined;
  if (uri === undefined) {
    uri = disk.active()?.uri;
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
  output.appendLine(`[graph] ${uri.fsPath}: ${JSON.stringify(answer)}`);
  const outcome = graphOutcome(baseName(uri), answer);
  if (outcome.url === undefined) {
    if (answer?.error === undefined) {
      void vscode.window.showErrorMessage(outcome.message); // (the server shows its own errors)
    }
    return;
  }
  const external = (await vscode.env.asExternalUri(vscode.Uri.parse(outcome.url))).toString();
  const where = viewerAddress(outcome.url, external);
  const inEditor = openIn(vscode.workspace.getConfiguration(SECTION).get("dispatchGraph.openIn")) === "editor";
  if (inEditor || where.proxied) {
    if (where.proxied && !inEditor) {
      // openExternal would go through the same proxy: the raw URL in a tab (the webview's frame).
      output.appendLine(`[graph] ${external} is a path proxy, which Model Explorer cannot run behind: ` +
        `shown in a tab at ${where.url} (reachable where the browser runs on the server's machine)`);
    }
    graphPanel.show(where.url, `Dispatch graph: ${baseName(uri)}`, { doc: uri, lines: answer?.lines ?? {} });
    void vscode.window.showInformationMessage(outcome.message);
    return;
  }
  const opened = await vscode.env.openExternal(vscode.Uri.parse(outcome.url)); // (it maps the port as asExternalUri did)
  output.appendLine(`[graph] opened ${external}: ${opened}`);
  void vscode.window.showInformationMessage(opened ? outcome.message : `${outcome.message} (not opened: ${external})`);
}

function isBytecodeFile(uri: vscode.Uri | undefined): uri is vscode.Uri {
  return uri !== undefined && uri.scheme === "file" && uri.path.endsWith(".mlirbc");
}

async function showBytecodeAsText(arg?: vscode.Uri): Promise<void> {
  let uri = arg instanceof vscode.Uri ? arg : tabUri(vscode.window.tabGroups.activeTabGroup.activeTab);
  if (!isBytecodeFile(uri)) {
    const picked = await vscode.window.showOpenDialog({ filters: { "MLIR bytecode": ["mlirbc"] }, canSelectMany: false });
    uri = picked?.[0];
  }
  await starting?.catch(() => undefined); // a .mlirbc tab restored while the server starts
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

/** In Restricted Mode, the status bar's note (which of the folder's settings wait for trust). */
function restrictedMode(): { suffix: string; tooltip: string } | undefined {
  if (vscode.workspace.isTrusted) {
    return undefined;
  }
  const cfg = vscode.workspace.getConfiguration();
  const ignored = RESTRICTED_SETTINGS.filter((name) => {
    const v = cfg.inspect(name);
    return v?.workspaceValue !== undefined || v?.workspaceFolderValue !== undefined;
  });
  return restrictedNote(ignored);
}

/** A document's size in characters (bytes for ASCII IR), without copying its text. */
function documentSize(doc: vscode.TextDocument): number {
  return doc.offsetAt(doc.lineAt(doc.lineCount - 1).range.end);
}

/** The status bar item: the active file's dispatch count, what-if delta, spinner while compiling.
 * The server schedules the counts (open, save, idle: its settings) and says when one finished;
 * the item asks for one only when the user does (click, command, code lens). */
class DispatchStatus implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("mlirLsp.dispatches", vscode.StatusBarAlignment.Right, 100);
  private readonly results = new Map<string, { version: number; result: DispatchResult }>();
  private readonly pending = new Map<string, Promise<DispatchResult>>();
  private readonly subs: vscode.Disposable[] = [];

  constructor() {
    this.item.name = "mlir-lsp dispatch count";
    this.item.command = "mlirLsp.recomputeDispatchCount";
    this.subs.push(
      vscode.window.onDidChangeActiveTextEditor(() => this.refresh()),
      vscode.workspace.onDidChangeTextDocument((e) => e.document === vscode.window.activeTextEditor?.document && this.refresh()),
      vscode.workspace.onDidCloseTextDocument((doc) => this.results.delete(doc.uri.toString())),
      vscode.workspace.onDidChangeConfiguration((e) => e.affectsConfiguration(SECTION) && this.refresh()),
    );
  }

  private dispatchSetting<T>(key: string, fallback: T): T {
    return vscode.workspace.getConfiguration(SECTION).get<T>(`dispatch.${key}`, fallback);
  }

  private autoMaxMegabytes(): number {
    return this.dispatchSetting("autoMaxMegabytes", 16);
  }

  /** A count the server finished (COUNTED_NOTIFICATION), for the version it counted. */
  accept(p: DispatchResult & { uri?: string }): void {
    if (typeof p.uri !== "string" || (p.error ?? "").startsWith("cancelled")) {
      return;
    }
    const { uri, ...result } = p;
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri);
    if (doc === undefined) {
      return;
    }
    this.results.set(uri, { version: result.version ?? doc.version, result });
    output.appendLine(`[dispatch] ${doc.uri.fsPath}: ${JSON.stringify({ ...result, per_function: undefined })}`);
    this.refresh();
  }

  clear(): void {
    this.results.clear();
    this.refresh();
  }

  /** Show what is known for the active editor; count it if nothing is known yet. */
  refresh(): void {
    const doc = vscode.window.activeTextEditor?.document;
    if (!isMlir(doc) || !vscode.workspace.getConfiguration(SECTION).get<boolean>("statusBar.enabled", true) ||
        !this.dispatchSetting("enabled", true)) {
      this.item.hide();
      return;
    }
    const key = doc.uri.toString();
    const known = this.results.get(key);
    if (this.pending.has(key)) {
      this.show(computingView(this.dispatchSetting("profile", "default")));
    } else if (known !== undefined) {
      const view = resultView(known.result);
      if (known.version !== doc.version) {
        view.text += " (edited)";
      }
      this.show(view);
    } else if (this.dispatchSetting<string>("trigger", "save") !== "manual" && !autoCountAllowed(documentSize(doc), this.autoMaxMegabytes())) {
      this.show(onRequestView(documentSize(doc), this.autoMaxMegabytes()));
    } else {
      this.show(idleView());
    }
  }

  private show(view: { text: string; tooltip: string; isError: boolean }): void {
    const note = restrictedMode();
    this.item.text = view.text + (note?.suffix ?? "");
    this.item.tooltip = note === undefined ? view.tooltip : `${view.tooltip}\n${note.tooltip}`;
    this.item.backgroundColor = view.isError ? new vscode.ThemeColor("statusBarItem.warningBackground") : undefined;
    this.item.show();
  }

  compute(doc: vscode.TextDocument, attempt = 0): Promise<DispatchResult> {
    const key = doc.uri.toString();
    const running = this.pending.get(key);
    if (running !== undefined) {
      return running;
    }
    const c = currentClient();
    if (c === undefined || !c.isRunning()) {
      return Promise.resolve({ error: "the language server is not running" });
    }
    const version = doc.version;
    const p = (async (): Promise<DispatchResult> => {
      try {
        return (await c.sendRequest<DispatchResult | null>(DISPATCH_REQUEST, { uri: key })) ?? { error: "no answer" };
      } catch (e) {
        return { error: errorText(e) };
      }
    })().then((result) => {
      this.pending.delete(key);
      const error = result.error ?? "";
      if (error.startsWith("document not open") && attempt < 5 && !doc.isClosed) {
        // Asked before the server saw didOpen (at start-up): ask again in a moment.
        setTimeout(() => void this.compute(doc, attempt + 1), 1000);
      } else if (!error.startsWith("cancelled")) {
        this.results.set(key, { version, result });
      }
      output.appendLine(`[dispatch] ${doc.uri.fsPath}: ${JSON.stringify({ ...result, per_function: undefined })}`);
      this.refresh();
      return result;
    });
    this.pending.set(key, p);
    this.refresh();
    return p;
  }

  dispose(): void {
    for (const s of this.subs) {
      s.dispose();
    }
    this.item.dispose();
  }
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel("mlir-lsp");
  status = new DispatchStatus();
  disk = new DiskFiles({
    client: () => currentClient(),
    ready: () => (starting ?? Promise.resolve()).catch(() => undefined),
    output,
    dispatchRequest: DISPATCH_REQUEST,
    profile: () => vscode.workspace.getConfiguration(SECTION).get<string>("dispatch.profile", "default"),
  });
  graphPanel = new GraphPanel(output);
  context.subscriptions.push(output, status, disk, graphPanel);
  registerVirtualScheme(context, DISPATCH_IR_SCHEME);
  registerVirtualScheme(context, BYTECODE_SCHEME);
  const command = (name: string, fn: (...args: never[]) => Promise<void> | void): void => {
    context.subscriptions.push(vscode.commands.registerCommand(name, fn));
  };
  session = new Session<LanguageClient>(startClient, (line) => output.appendLine(line));
  context.subscriptions.push({ dispose: () => void session.dispose() });
  command("mlirLsp.restart", () => restart());
  command("mlirLsp.showLog", () => output.show());
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
    if (!vscode.workspace.getConfiguration(SECTION).get<boolean>("bytecode.openAsText", true)) {
      return;
    }
    for (const uri of e.opened.map(tabUri).filter(isBytecodeFile)) {
      void showBytecodeAsText(uri);
    }
  }));
  context.subscriptions.push(vscode.workspace.onDidChangeConfiguration((e) => {
    if (e.affectsConfiguration(`${SECTION}.server`)) {
      output.appendLine("[server] mlirLsp.server changed; restarting the server");
      void restart();
    }
  }));
  // Trusted now: the folder's own server, compiler and flags settings apply (a new server).
  context.subscriptions.push(vscode.workspace.onDidGrantWorkspaceTrust(() => {
    output.appendLine("[server] the folder is trusted now: its settings apply; restarting the server");
    void restart();
  }));
  await session.restart();
  disk.scan();
}

export async function deactivate(): Promise<void> {
  await session?.dispose();
}
