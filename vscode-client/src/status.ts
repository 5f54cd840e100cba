// The status bar item with the active file's dispatch count (the words are in dispatchStatus.ts),
// and its note in Restricted Mode.
import * as vscode from "vscode";
import { LanguageClient } from "vscode-languageclient/node";
import { DispatchResult, computingView, idleView, resultView } from "./dispatchStatus";
import { autoCountAllowed, onRequestView } from "./diskStatus";
import { SECTION, documentSize, errorText, isMlir } from "./documents";
import { RESTRICTED_SETTINGS, restrictedNote } from "./restricted";
import { log } from "./log";

export const DISPATCH_REQUEST = "mlirLsp/dispatchCount";

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

/** The status bar item: the active file's dispatch count, what-if delta, spinner while compiling.
 * The server schedules the counts (open, save, idle: its settings) and says when one finished;
 * the item asks for one only when the user does (click, command, code lens). */
export class DispatchStatus implements vscode.Disposable {
  private readonly item = vscode.window.createStatusBarItem("mlirLsp.dispatches", vscode.StatusBarAlignment.Right, 100);
  private readonly results = new Map<string, { version: number; result: DispatchResult }>();
  private readonly pending = new Map<string, Promise<DispatchResult>>();
  private readonly subs: vscode.Disposable[] = [];

  constructor(private readonly client: () => LanguageClient | undefined) {
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
    log(`[dispatch] ${doc.uri.fsPath}: ${JSON.stringify({ ...result, per_function: undefined })}`);
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
    const c = this.client();
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
      log(`[dispatch] ${doc.uri.fsPath}: ${JSON.stringify({ ...result, per_function: undefined })}`);
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

/** The language status item of MLIR files (beside the language mode): where the server came
 * from, or why none runs, with a link to the log. */
export class ServerStatus implements vscode.Disposable {
  private readonly item = vscode.languages.createLanguageStatusItem("mlirLsp.server", { language: "mlir" });

  constructor() {
    this.item.name = "mlir-lsp server";
    this.item.text = "mlir-lsp: looking for the server";
    this.item.command = { title: "Show Log", command: "mlirLsp.showLog" };
  }

  show(text: string, ok: boolean): void {
    this.item.text = `mlir-lsp: ${text}`;
    this.item.severity = ok ? vscode.LanguageStatusSeverity.Information : vscode.LanguageStatusSeverity.Warning;
  }

  dispose(): void {
    this.item.dispose();
  }
}
