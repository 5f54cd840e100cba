// "Show dispatch graph": the arguments of the server's command `mlirLsp.showDispatchGraph` and
// what its answer says ({url, dispatches, marked: {mark: node ids}, graph, selected} or {error}).

export interface GraphAnswer {
  url?: string;
  dispatches?: number;
  marked?: Record<string, string[]>;
  graph?: string;
  selected?: string | null;
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
