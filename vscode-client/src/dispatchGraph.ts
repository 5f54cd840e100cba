// "Show dispatch graph": the arguments of the server's command `mlirLsp.showDispatchGraph` and
// what its answer says ({url, dispatches, marked: {mark: node ids}, graph, selected, lines} or
// {error}), and the webview that shows Model Explorer inside VS Code.

export interface GraphAnswer {
  url?: string;
  dispatches?: number;
  marked?: Record<string, string[]>;
  graph?: string;
  selected?: string | null;
  lines?: Record<string, number>; // node id -> 0-based line of its root op
  error?: string;
}

export interface GraphArguments {
  uri: string;
  line?: number;
  // The extension opens the URL itself (vscode.env.openExternal), not the server's window/showDocument.
  open: false;
}

export function graphArguments(uri: string, line?: number): GraphArguments {
  return line === undefined ? { uri, open: false } : { uri, line, open: false };
}

export interface GraphOutcome {
  url?: string;
  message: string;
  isError: boolean;
}

/** The URL to open and the one-line message for the answer (errors: the server showed them too). */
export function graphOutcome(name: string, answer: GraphAnswer | null | undefined): GraphOutcome {
  if (answer === null || answer === undefined || typeof answer !== "object") {
    return { message: `mlir-lsp: dispatch graph of ${name}: no answer from the server`, isError: true };
  }
  if (answer.error !== undefined || typeof answer.url !== "string") {
    return { message: `mlir-lsp: dispatch graph of ${name}: ${answer.error ?? "no URL in the server's answer"}`, isError: true };
  }
  const n = answer.dispatches ?? 0;
  const marks = Object.entries(answer.marked ?? {})
    .filter(([, ids]) => ids.length > 0)
    .map(([mark, ids]) => `${ids.length} ${mark}`);
  let message = `mlir-lsp: dispatch graph of ${name}: ${n} dispatch${n === 1 ? "" : "es"}`;
  if (marks.length > 0) {
    message += ` (marked: ${marks.join(", ")})`;
  }
  if (answer.selected) {
    message += `; ${answer.selected} selected`;
  }
  return { url: answer.url, message: `${message}. Opened in Model Explorer.`, isError: false };
}

/** Where "Show dispatch graph" opens the viewer (setting mlirLsp.dispatchGraph.openIn). */
export type OpenIn = "browser" | "editor";

export function openIn(setting: unknown): OpenIn {
  return setting === "editor" ? "editor" : "browser";
}

/**
 * Where the user's browser can reach the viewer: `external` (vscode.env.asExternalUri of `raw`)
 * when it keeps the path (local, or a forwarded port), else `raw`. A path proxy (code-server's
 * `/proxy/PORT/`) cannot serve Model Explorer, whose page loads everything from `/`; the raw
 * URL works where the browser runs on the server's machine (`proxied`: say so).
 */
export function viewerAddress(raw: string, external: string): { url: string; proxied: boolean } {
  const a = new URL(raw);
  const b = new URL(external);
  return a.pathname === b.pathname ? { url: external, proxied: false } : { url: raw, proxied: true };
}

/** The 0-based source line of a node Model Explorer reports selected, when the answer has one. */
export function nodeLine(lines: Record<string, number> | undefined, nodeId: unknown): number | undefined {
  if (typeof nodeId !== "string" || lines === undefined || !Object.prototype.hasOwnProperty.call(lines, nodeId)) {
    return undefined;
  }
  const line = lines[nodeId];
  return Number.isInteger(line) && line >= 0 ? line : undefined;
}

function escapeAttribute(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/"/g, "&quot;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

/**
 * The webview of mlirLsp.dispatchGraph.openIn "editor": Model Explorer in a frame filling it.
 * Model Explorer tells its parent window which node is selected (a message
 * {cmd: "model-explorer-node-selected", nodeId}); the page passes the id on to the extension.
 */
export function graphPanelHtml(url: string, nonce: string): string {
  const origin = new URL(url).origin;
  return `<!DOCTYPE html>
<html>
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; frame-src ${origin}; script-src 'nonce-${nonce}'; style-src 'unsafe-inline';">
<style>html, body, iframe { margin: 0; padding: 0; border: 0; width: 100%; height: 100%; overflow: hidden; }</style>
</head>
<body>
<iframe src="${escapeAttribute(url)}" title="Model Explorer"></iframe>
<script nonce="${nonce}">
const vscode = acquireVsCodeApi();
window.addEventListener("message", (e) => {
  const d = e.data;
  if (d && d.cmd === "model-explorer-node-selected" && typeof d.nodeId === "string") {
    vscode.postMessage({ nodeId: d.nodeId });
  }
});
</script>
</body>
</html>
`;
}
