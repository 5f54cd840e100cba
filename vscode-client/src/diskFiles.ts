// Editors whose file VS Code never syncs to the extension (above 50 MB): checked and fixed on disk
// by the server, with a status bar item that says so (the words are in diskStatus.ts).
import * as vscode from "vscode";
import { LanguageClient } from "vscode-languageclient/node";
import { DispatchResult } from "./dispatchStatus";
import {
  DiskAction, DiskCheckResult, DiskFileState, DiskFixResult, FixMode, FIX_TITLES,
  MB, diskMenu, diskView, fixMessage, isMlirPath, megabytes, needsDiskCheck,
} from "./diskStatus";

export const CHECK_FROM_DISK_REQUEST = "mlirLsp/checkFromDisk";
export const FIX_ON_DISK_REQUEST = "mlirLsp/fixOnDisk";
export const DISK_FILE_CLOSED = "mlirLsp/diskFileClosed";
const RECHECK_DELAY_MS = 500; // writes on disk come in bursts
// VS Code reloads a changed file by replacing its text, which drops the squiggles of diagnostics
// published before the reload finished (seen: 8 s for 55 MB on a loaded machine). It gives an
// extension no event for the reload of a file it does not sync, so they are set again after
// each of these delays (Problems panel entries stay as they are).
const MARKER_REFRESH_MS = [1000, 3000, 6000, 12000, 24000];

export interface DiskDeps {
  client(): LanguageClient | undefined;
  /** Resolves once the client started (or failed to). */
  ready(): Promise<void>;
  output: vscode.OutputChannel;
  dispatchRequest: string;
  profile(): string;
}

interface Tracked extends DiskFileState {
  uri: vscode.Uri;
  watcher: vscode.FileSystemWatcher;
  timer?: NodeJS.Timeout;
  refreshTimers: NodeJS.Timeout[];
}

/** The file a tab shows (a binary .mlirbc opens as a text or custom editor input). */
export function tabUri(tab: vscode.Tab | undefined): vscode.Uri | undefined {
  const input = tab?.input;
  return input instanceof vscode.TabInputText || input instanceof vscode.TabInputCustom ? input.uri : undefined;
}

function baseName(uri: vscode.Uri): string {
  return uri.path.split("/").pop() ?? "file";
}

function errorText(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

export class DiskFiles implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("mlirLsp.diskFile", vscode.StatusBarAlignment.Right, 101);
  private readonly files = new Map<string, Tracked>();
  private readonly statting = new Set<string>();
  private readonly subs: vscode.Disposable[] = [];

  constructor(private readonly deps: DiskDeps) {
    this.item.name = "mlir-lsp: file checked from disk";
    this.item.command = "mlirLsp.diskFileActions";
    this.subs.push(
      vscode.window.tabGroups.onDidChangeTabs(() => this.scan()),
      vscode.window.tabGroups.onDidChangeTabGroups(() => this.scan()),
      vscode.workspace.onDidOpenTextDocument(() => this.scan()),
    );
  }

  private synced(uri: vscode.Uri): boolean {
    const key = uri.toString();
    return vscode.workspace.textDocuments.some((d) => d.uri.toString() === key);
  }

  /** Track the files visible editors show that VS Code does not sync; drop those no tab shows. */
  scan(): void {
    const open = new Set<string>();
    for (const group of vscode.window.tabGroups.all) {
      for (const tab of group.tabs) {
        const uri = tabUri(tab);
        if (uri !== undefined) {
          open.add(uri.toString());
        }
      }
      const uri = tabUri(group.activeTab);
      if (uri !== undefined && uri.scheme === "file" && isMlirPath(uri.path) && !this.files.has(uri.toString())) {
        void this.consider(uri);
      }
    }
    for (const [key, t] of [...this.files]) {
      if (!open.has(key) || this.synced(t.uri)) {
        this.untrack(key, t);
      }
    }
    this.refresh();
  }

  private async consider(uri: vscode.Uri): Promise<void> {
    const key = uri.toString();
    if (this.statting.has(key) || this.synced(uri)) {
      return;
    }
    this.statting.add(key);
    let bytes: number | undefined;
    try {
      bytes = (await vscode.workspace.fs.stat(uri)).size;
    } catch {
      bytes = undefined;
    } finally {
      this.statting.delete(key);
    }
    if (this.files.has(key) || !needsDiskCheck({ scheme: uri.scheme, path: uri.path, synced: this.synced(uri), bytes })) {
      return;
    }
    const dir = vscode.Uri.joinPath(uri, "..");
    const watcher = vscode.workspace.createFileSystemWatcher(new vscode.RelativePattern(dir, baseName(uri)));
    const t: Tracked = { uri, name: baseName(uri), bytes: bytes ?? 0, checking: false, counting: false, watcher, refreshTimers: [] };
    const changed = (): void => {
      clearTimeout(t.timer);
      t.timer = setTimeout(() => void this.check(t).then(() => this.refreshMarkers(t)), RECHECK_DELAY_MS);
    };
    watcher.onDidChange(changed);
    watcher.onDidCreate(changed);
    watcher.onDidDelete(changed);
    this.files.set(key, t);
    this.deps.output.appendLine(`[disk] ${uri.fsPath}: ${megabytes(t.bytes)} MB, above VS Code's 50 MB sync limit: checked from disk`);
    await this.check(t);
  }

  /** Set the file's diagnostics again a little later, for the editor that reloads it. */
  private refreshMarkers(t: Tracked): void {
    t.refreshTimers.forEach(clearTimeout);
    t.refreshTimers = MARKER_REFRESH_MS.map((ms) => setTimeout(() => {
      const collection = this.deps.client()?.diagnostics;
      const shown = collection?.get(t.uri);
      if (collection !== undefined && shown !== undefined && shown.length > 0 && this.files.get(t.uri.toString()) === t) {
        collection.set(t.uri, [...shown]);
      }
    }, ms));
  }

  private untrack(key: string, t: Tracked): void {
    clearTimeout(t.timer);
    t.refreshTimers.forEach(clearTimeout);
    t.watcher.dispose();
    this.files.delete(key);
    const c = this.deps.client();
    if (c?.isRunning() === true) {
      void c.sendNotification(DISK_FILE_CLOSED, { uri: key }).catch(() => undefined);
    }
  }

  /** The server restarted: it knows none of the files. */
  recheckAll(): void {
    for (const t of this.files.values()) {
      t.count = undefined;
      void this.check(t);
    }
  }

  /** A request's answer; a failure to get one is an answer with only its `error`. */
  private async request<T extends { error?: string | null }>(method: string, params: object): Promise<T> {
    const failed = (error: string): T => ({ error }) as T;
    await this.deps.ready();
    const c = this.deps.client();
    if (c === undefined || !c.isRunning()) {
      return failed("the language server is not running");
    }
    try {
      return (await c.sendRequest<T | null>(method, params)) ?? failed("no answer");
    } catch (e) {
      return failed(errorText(e));
    }
  }

  async check(t: Tracked, force = false): Promise<void> {
    t.checking = true;
    this.refresh();
    const r = await this.request<DiskCheckResult>(CHECK_FROM_DISK_REQUEST, { uri: t.uri.toString(), force });
    t.checking = false;
    t.result = r; // an error (refused, unreadable, deleted) is said in the status bar
    if (typeof r.megabytes === "number" && r.megabytes > 0) {
      t.bytes = r.megabytes * MB; // the size may have changed (a fix, a new export)
    }
    this.deps.output.appendLine(`[disk] ${t.uri.fsPath}: ${JSON.stringify(r)}`);
    this.refresh();
  }

  /** The tracked file of the active editor, if it is one. */
  active(): Tracked | undefined {
    const uri = tabUri(vscode.window.tabGroups.activeTabGroup.activeTab);
    return uri === undefined ? undefined : this.files.get(uri.toString());
  }

  private target(arg: unknown): Tracked | undefined {
    if (arg instanceof vscode.Uri) {
      return this.files.get(arg.toString());
    }
    if (typeof arg === "string") {
      return this.files.get(vscode.Uri.parse(arg).toString());
    }
    return this.active();
  }

  async fix(mode: FixMode, arg?: unknown): Promise<boolean> {
    const t = this.target(arg);
    if (t === undefined) {
      return false;
    }
    const r = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `mlir-lsp: fixing ${t.name} on disk (${FIX_TITLES[mode]})` },
      () => this.request<DiskFixResult>(FIX_ON_DISK_REQUEST, { uri: t.uri.toString(), mode }),
    );
    this.deps.output.appendLine(`[disk] fix ${mode} ${t.uri.fsPath}: ${JSON.stringify(r)}`);
    const msg = fixMessage(t.name, mode, r);
    if (msg.isError) {
      void vscode.window.showErrorMessage(msg.text);
    } else {
      void vscode.window.showInformationMessage(msg.text);
    }
    t.count = undefined; // the text changed
    await this.check(t); // the server's answer for the file as it is now (no second check there)
    this.refreshMarkers(t);
    return true;
  }

  async count(arg?: unknown): Promise<boolean> {
    const t = this.target(arg);
    if (t === undefined) {
      return false;
    }
    if (!t.counting) {
      t.counting = true;
      this.refresh();
      t.count = await this.request<DispatchResult>(this.deps.dispatchRequest, { uri: t.uri.toString() });
      t.counting = false;
      this.deps.output.appendLine(`[disk] dispatches of ${t.uri.fsPath}: ${JSON.stringify({ ...t.count, per_function: undefined })}`);
      this.refresh();
    }
    return true;
  }

  async recheck(arg?: unknown): Promise<boolean> {
    const t = this.target(arg);
    if (t !== undefined) {
      await this.check(t, true);
    }
    return t !== undefined;
  }

  /** The status bar item's click: what can be done with the active file. */
  async menu(): Promise<void> {
    const t = this.active();
    if (t === undefined) {
      return;
    }
    const picked = await vscode.window.showQuickPick(diskMenu(t, this.deps.profile()), {
      title: `mlir-lsp: ${t.name} (checked from disk)`,
    });
    const actions: Record<DiskAction, () => Thenable<unknown>> = {
      count: () => this.count(t.uri),
      strip: () => this.fix("strip", t.uri),
      assume: () => this.fix("assume", t.uri),
      check: () => this.check(t, true),
      problems: () => vscode.commands.executeCommand("workbench.actions.view.problems"),
    };
    if (picked !== undefined) {
      await actions[picked.action]();
    }
  }

  refresh(): void {
    const t = this.active();
    if (t === undefined) {
      this.item.hide();
      return;
    }
    const view = diskView(t);
    this.item.text = view.text;
    this.item.tooltip = view.tooltip;
    this.item.backgroundColor = view.isError ? new vscode.ThemeColor("statusBarItem.warningBackground") : undefined;
    this.item.show();
  }

  dispose(): void {
    for (const [key, t] of [...this.files]) {
      this.untrack(key, t);
    }
    for (const s of this.subs) {
      s.dispose();
    }
    this.item.dispose();
  }
}
