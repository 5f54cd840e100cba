// mlirLsp.dispatchGraph.openIn "editor": Model Explorer in a webview beside the document; a node
// selected there reveals its dispatch's root op in the document.
import * as crypto from "node:crypto";
import * as vscode from "vscode";
import { graphPanelHtml, nodeLine } from "./dispatchGraph";

interface Shown {
  doc: vscode.Uri;
  lines: Record<string, number>;
}

export class GraphPanel implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private shown: Shown | undefined;

  constructor(private readonly output: vscode.OutputChannel) {}

  /** Show the viewer at `url` (where the user's browser reaches it: see viewerAddress). */
  show(url: string, title: string, shown: Shown): void {
    this.shown = shown;
    if (this.panel === undefined) {
      this.panel = vscode.window.createWebviewPanel("mlirLsp.dispatchGraph", title,
        { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
        { enableScripts: true, retainContextWhenHidden: true });
      this.panel.onDidDispose(() => {
        this.panel = undefined;
      });
      this.panel.webview.onDidReceiveMessage((m: { nodeId?: unknown }) => void this.reveal(m.nodeId));
    }
    this.panel.title = title;
    this.panel.webview.html = graphPanelHtml(url, crypto.randomBytes(16).toString("hex"));
    this.panel.reveal(vscode.ViewColumn.Beside, true);
    this.output.appendLine(`[graph] shown in the editor: ${url}`);
  }

  private async reveal(nodeId: unknown): Promise<void> {
    const line = nodeLine(this.shown?.lines, nodeId);
    this.output.appendLine(`[graph] node selected: ${String(nodeId)} (line ${line === undefined ? "?" : line + 1})`);
    if (this.shown === undefined || line === undefined) {
      return;
    }
    const at = new vscode.Range(line, 0, line, 0);
    const editor = await vscode.window.showTextDocument(this.shown.doc, { viewColumn: vscode.ViewColumn.One, selection: at, preserveFocus: false });
    editor.revealRange(at, vscode.TextEditorRevealType.InCenterIfOutsideViewport);
  }

  dispose(): void {
    this.panel?.dispose();
  }
}
