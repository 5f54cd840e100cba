// Files VS Code never syncs to an extension: above 50 MB (MODEL_SYNC_LIMIT in its text model) no
// extension gets the document, so no didOpen reaches the server. The extension asks the server to
// check such a file on disk (mlirLsp/checkFromDisk) and to fix it there (mlirLsp/fixOnDisk). This
// module holds the decisions and the status bar's words, with no vscode import (unit-tested).
import { DispatchResult, SPINNER, StatusView, resultView } from "./dispatchStatus";

export const MB = 1024 * 1024;
export const SYNC_LIMIT_BYTES = 50 * MB;

// The server's answers (see mlir_lsp_asserts/server/disk_files_feature.py).
export interface DiskCheckResult {
  uri?: string;
  megabytes?: number | null;
  findings?: number;
  fixable?: number;
  error?: string | null;
  notes?: string[];
}

export interface DiskFixResult {
  fixed?: number;
  remaining?: number | null;
  error?: string | null;
}

export type FixMode = "strip" | "assume";

export const FIX_TITLES: Record<FixMode, string> = {
  strip: "strip asserts",
  assume: "rewrite to util.assume.int",
};

export function isMlirPath(path: string): boolean {
  return path.endsWith(".mlir") || path.endsWith(".mlirbc");
}

/** An editor shows this file, the extension has no document for it, and it is above the sync
 * limit: VS Code will never sync it, so it is checked from disk. */
export function needsDiskCheck(f: { scheme: string; path: string; synced: boolean; bytes: number | undefined }): boolean {
  return f.scheme === "file" && isMlirPath(f.path) && !f.synced && f.bytes !== undefined && f.bytes > SYNC_LIMIT_BYTES;
}

/** Whether a file of this size is counted without being asked (on open, save, idle):
 * `dispatch.autoMaxMegabytes`, as the server's own trigger reads it. */
export function autoCountAllowed(bytes: number, autoMaxMegabytes: number): boolean {
  return bytes <= autoMaxMegabytes * MB;
}

export function megabytes(bytes: number): string {
  return (bytes / MB).toFixed(bytes >= 10 * MB ? 0 : 1);
}

/** The dispatch status of a synced file above `dispatch.autoMaxMegabytes`: counted on request. */
export function onRequestView(bytes: number, autoMaxMegabytes: number): StatusView {
  return {
    text: "$(circuit-board) dispatches: ?",
    tooltip: `mlir-lsp: this file is ${megabytes(bytes)} MB, above dispatch.autoMaxMegabytes (${autoMaxMegabytes} MB): ` +
      "its dispatches are counted only on request (a file this size can compile for minutes).\nClick to count them with iree-compile.",
    isError: false,
  };
}

export interface DiskFileState {
  name: string;
  bytes: number;
  checking: boolean;
  result?: DiskCheckResult;
  counting: boolean;
  count?: DispatchResult;
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? "" : "s"}`;
}

function why(s: DiskFileState): string {
  return `${s.name} is ${megabytes(s.bytes)} MB, above VS Code's 50 MB sync limit: VS Code gives no extension ` +
    "its text, so mlir-lsp checks the file on disk (as `mlir-lsp --check` does).";
}

/** The status bar item of an editor whose file is checked from disk. */
export function diskView(s: DiskFileState): StatusView {
  const size = `${megabytes(s.bytes)} MB, above VS Code's 50 MB sync limit`;
  const lines = [`mlir-lsp: ${why(s)}`];
  let text: string;
  let isError = false;
  const r = s.result;
  if (s.checking || r === undefined) {
    text = `${SPINNER} mlir-lsp: ${size} — checking from disk`;
  } else if (r.error) {
    text = `$(warning) mlir-lsp: ${size} — check from disk failed`;
    lines.push(`The check failed: ${r.error}`);
    isError = true;
  } else {
    const n = r.findings ?? 0;
    text = `$(database) mlir-lsp: ${size} — checked from disk: ${plural(n, "finding")}`;
    lines.push(`${plural(n, "finding")} (${r.fixable ?? 0} fixable) in the Problems panel.`);
  }
  for (const note of r?.notes ?? []) {
    lines.push(`Note: ${note}`);
  }
  if (s.counting) {
    text += ` · ${SPINNER} dispatches`;
    lines.push("iree-compile is counting its dispatches.");
  } else if (s.count !== undefined) {
    const v = resultView(s.count);
    text += ` · ${v.text.replace(/^\$\([\w-]+\) /, "")}`;
    lines.push(...v.tooltip.split("\n").filter((l) => !l.startsWith("Click")));
  }
  lines.push("Click for: count dispatches, fix the file on disk (strip asserts, or rewrite to util.assume.int), check again.");
  return { text, tooltip: lines.join("\n"), isError };
}

export type DiskAction = "count" | "strip" | "assume" | "check" | "problems";

export interface DiskMenuItem {
  action: DiskAction;
  label: string;
  detail: string;
}

/** What the status bar item offers when clicked. */
export function diskMenu(s: DiskFileState, profile: string): DiskMenuItem[] {
  const items: DiskMenuItem[] = [];
  const r = s.result;
  const fixable = r?.fixable ?? 0;
  if (!s.counting) {
    items.push({
      action: "count", label: "$(circuit-board) Count dispatches",
      detail: `iree-compile (profile ${profile}) on the file on disk; a file of ${megabytes(s.bytes)} MB can compile for minutes`,
    });
  }
  if (fixable > 0) {
    for (const mode of ["strip", "assume"] as const) {
      items.push({
        action: mode, label: `$(wrench) Fix the file on disk (${FIX_TITLES[mode]})`,
        detail: `${plural(fixable, "fixable finding")}; written in place as \`mlir-lsp --check --fix\` does, VS Code reloads it`,
      });
    }
  }
  if ((r?.findings ?? 0) > 0) {
    items.push({ action: "problems", label: "$(list-flat) Show the findings", detail: "the Problems panel" });
  }
  items.push({ action: "check", label: "$(refresh) Check again from disk", detail: "" });
  return items;
}

/** The message after a fix on disk. */
export function fixMessage(name: string, mode: FixMode, r: DiskFixResult): { text: string; isError: boolean } {
  if (r.error) {
    return { text: `mlir-lsp: ${name}: fix on disk (${FIX_TITLES[mode]}) failed: ${r.error}`, isError: true };
  }
  const fixed = r.fixed ?? 0;
  if (fixed === 0) {
    return { text: `mlir-lsp: ${name}: nothing to fix on disk (${plural(r.remaining ?? 0, "finding")} left).`, isError: false };
  }
  return {
    text: `mlir-lsp: ${name}: ${plural(fixed, "assert")} fixed on disk (${FIX_TITLES[mode]}); ${plural(r.remaining ?? 0, "finding")} left.`,
    isError: false,
  };
}
