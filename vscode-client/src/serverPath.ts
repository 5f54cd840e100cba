// Finding the server: mlirLsp.server.path, else mlirLsp.server.pythonPath running
// `-m mlir_lsp_asserts`, else `mlir-lsp` on PATH. Pure (no vscode import) so node's test
// runner covers it; the file system and the import check are passed in.
import * as path from "node:path";

export interface ServerSettings {
  path: string;
  pythonPath: string;
}

export interface ResolveEnv {
  workspaceFolder: string | undefined;
  home: string;
  env: Record<string, string | undefined>;
  platform: NodeJS.Platform;
  /** True when p is a file this user may execute. */
  isExecutable(p: string): boolean;
  /** True when the interpreter can import mlir_lsp_asserts (omitted: assumed). Asynchronous in
   * the extension: a slow interpreter must not block the extension host. */
  canImport?(python: string): boolean | Promise<boolean>;
}

export interface ServerCommand {
  command: string;
  args: string[];
  source: string;
}

export type Resolution =
  | { ok: true; server: ServerCommand; tried: string[] }
  | { ok: false; tried: string[] };

/** `${workspaceFolder}`, `${workspaceFolderBasename}`, `${userHome}`, `${env:NAME}` and a leading `~`. */
export function expandVariables(value: string, env: ResolveEnv): string {
  let out = value.trim();
  if (out === "~" || out.startsWith("~/") || out.startsWith("~\\")) {
    out = env.home + out.slice(1);
  }
  return out.replace(/\$\{([^}]+)\}/g, (whole: string, name: string): string => {
    if (name === "workspaceFolder" || name === "workspaceRoot") {
      return env.workspaceFolder ?? whole;
    }
    if (name === "workspaceFolderBasename") {
      return env.workspaceFolder !== undefined ? path.basename(env.workspaceFolder) : whole;
    }
    if (name === "userHome") {
      return env.home;
    }
    if (name.startsWith("env:")) {
      return env.env[name.slice(4)] ?? "";
    }
    return whole;
  });
}

/** Every place a bare command name may be found on PATH (with PATHEXT on Windows). */
export function pathCandidates(name: string, env: ResolveEnv): string[] {
  const sep = env.platform === "win32" ? ";" : ":";
  const dirs = (env.env.PATH ?? env.env.Path ?? "").split(sep).filter((d) => d !== "");
  const exts = env.platform === "win32" ? ["", ...(env.env.PATHEXT ?? ".EXE;.CMD;.BAT").split(";")] : [""];
  const join = (d: string, f: string): string => (env.platform === "win32" ? path.win32.join(d, f) : path.posix.join(d, f));
  return dirs.flatMap((d) => exts.map((e) => join(d, name + e)));
}

function isBareName(p: string): boolean {
  return !p.includes("/") && !p.includes("\\");
}

/** A setting's value as an executable: expanded, relative to the workspace, or found on PATH. */
export function locate(value: string, env: ResolveEnv): { found?: string; looked: string } {
  const expanded = expandVariables(value, env);
  if (isBareName(expanded)) {
    const found = pathCandidates(expanded, env).find((c) => env.isExecutable(c));
    return found !== undefined ? { found, looked: `${expanded} on PATH` } : { looked: `${expanded} on PATH: not found` };
  }
  const abs = path.isAbsolute(expanded) || env.workspaceFolder === undefined
    ? expanded
    : path.join(env.workspaceFolder, expanded);
  return env.isExecutable(abs) ? { found: abs, looked: abs } : { looked: `${abs}: not found or not executable` };
}

export async function resolveServer(settings: ServerSettings, env: ResolveEnv): Promise<Resolution> {
  const tried: string[] = [];
  if (settings.path.trim() !== "") {
    const r = locate(settings.path, env);
    tried.push(`mlirLsp.server.path = ${JSON.stringify(settings.path)} -> ${r.looked}`);
    if (r.found !== undefined) {
      return { ok: true, server: { command: r.found, args: [], source: "mlirLsp.server.path" }, tried };
    }
  }
  if (settings.pythonPath.trim() !== "") {
    const r = locate(settings.pythonPath, env);
    if (r.found === undefined) {
      tried.push(`mlirLsp.server.pythonPath = ${JSON.stringify(settings.pythonPath)} -> ${r.looked}`);
    } else if (env.canImport !== undefined && !(await env.canImport(r.found))) {
      tried.push(`mlirLsp.server.pythonPath = ${JSON.stringify(settings.pythonPath)} -> ${r.found}: cannot import mlir_lsp_asserts (pip install mlir-lsp-asserts into it)`);
    } else {
      tried.push(`mlirLsp.server.pythonPath = ${JSON.stringify(settings.pythonPath)} -> ${r.found} -m mlir_lsp_asserts`);
      return { ok: true, server: { command: r.found, args: ["-m", "mlir_lsp_asserts"], source: "mlirLsp.server.pythonPath" }, tried };
    }
  }
  const r = locate("mlir-lsp", env);
  tried.push(r.looked);
  if (r.found !== undefined) {
    return { ok: true, server: { command: r.found, args: [], source: "PATH" }, tried };
  }
  return { ok: false, tried };
}

export function notFoundMessage(tried: string[]): string {
  return "mlir-lsp: cannot find the language server. Tried: " + tried.map((t, i) => `(${i + 1}) ${t}`).join("; ") +
    ". Set mlirLsp.server.path to the mlir-lsp executable (e.g. ${workspaceFolder}/.venv/bin/mlir-lsp) " +
    "or mlirLsp.server.pythonPath to a Python with mlir-lsp-asserts installed.";
}
