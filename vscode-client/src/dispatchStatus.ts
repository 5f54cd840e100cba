// The status bar text for a `mlirLsp/dispatchCount` result (see the server's dispatch preview:
// {flow_dispatches, stream_dispatches, profile, what_if: {flow_dispatches, saved, mode} | null,
// seconds, warnings} or {error}).

export interface WhatIf {
  mode?: string;
  flow_dispatches: number;
  saved?: number;
}

// The diff against the setting dispatch.baseline: its count and the difference, or why not.
export interface BaselineDiff {
  file?: string;
  flow_dispatches?: number;
  delta?: number;
  new?: { name: string }[] | null;
  error?: string;
}

export interface DispatchResult {
  error?: string;
  // The compiler cannot read the file's IREE syntax (another release's): no count, not a failure.
  unsupported_syntax?: boolean;
  flow_dispatches?: number;
  stream_dispatches?: number | null;
  profile?: string;
  what_if?: WhatIf | null;
  seconds?: number;
  warnings?: string[];
  version?: number;
  baseline?: BaselineDiff | null;
}

export interface StatusView {
  text: string;
  tooltip: string;
  isError: boolean;
}

export const SPINNER = "$(sync~spin)";

export function computingView(profile: string): StatusView {
  return { text: `${SPINNER} dispatches`, tooltip: `mlir-lsp: iree-compile is counting dispatches (${profile})`, isError: false };
}

export function idleView(): StatusView {
  return { text: "$(circuit-board) dispatches: ?", tooltip: "mlir-lsp: click to count dispatches with iree-compile", isError: false };
}

export function resultView(r: DispatchResult): StatusView {
  if (r.unsupported_syntax) {
    return { text: "$(info) dispatches: n/a (older IREE syntax)", tooltip: `mlir-lsp: ${r.error ?? "no count"}`, isError: false };
  }
  if (r.error !== undefined || r.flow_dispatches === undefined) {
    const err = r.error ?? "no count in the server's answer";
    return { text: "$(warning) dispatches: failed", tooltip: `mlir-lsp: dispatch count failed: ${err}\nClick to try again.`, isError: true };
  }
  const n = r.flow_dispatches;
  let text = `$(circuit-board) ${n} dispatch${n === 1 ? "" : "es"}`;
  const lines = [`mlir-lsp: ${n} dispatches at dispatch-creation (iree-compile, profile ${r.profile ?? "default"})`];
  if (r.stream_dispatches !== undefined && r.stream_dispatches !== null) {
    lines.push(`stream dispatch-count: ${r.stream_dispatches}`);
  }
  const w = r.what_if;
  if (w !== undefined && w !== null) {
    const delta = w.flow_dispatches - n;
    text += ` (what-if ${w.flow_dispatches}, ${delta > 0 ? "+" : ""}${delta})`;
    lines.push(`what-if: ${w.flow_dispatches} with the asserts ${w.mode === "assume" ? "rewritten to util.assume.int" : "removed"} (${delta > 0 ? "+" : ""}${delta})`);
  }
  const b = r.baseline;
  if (b !== undefined && b !== null) {
    if (b.error !== undefined) {
      lines.push(`baseline: ${b.error}`);
    } else if (b.delta !== undefined) {
      const d = b.delta;
      if (d !== 0) {
        text += `, ${d > 0 ? "+" : ""}${d} vs baseline`;
      }
      const fresh = (b.new ?? []).map((e) => e.name);
      lines.push(`baseline ${b.file ?? ""}: ${b.flow_dispatches ?? "?"} (${d > 0 ? "+" : ""}${d})` +
        (fresh.length ? `; new: ${fresh.slice(0, 5).join(", ")}${fresh.length > 5 ? " ..." : ""}` : ""));
    }
  }
  if (r.seconds !== undefined) {
    lines.push(`took ${r.seconds.toFixed(1)} s`);
  }
  for (const warning of r.warnings ?? []) {
    lines.push(`warning: ${warning}`);
  }
  lines.push("Click to recompute.");
  return { text, tooltip: lines.join("\n"), isError: false };
}
