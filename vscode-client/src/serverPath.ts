// Finding the server, in this order: the mlirLsp.server.path setting; the mlirLsp.server.pythonPath
// setting (`python -m mlir_lsp_asserts`); the interpreter selected in the Python extension; a
// `.venv` or `venv` in a workspace folder; `mlir-lsp` on PATH. A Python that lacks the package is
// passed over (the next step may find a server) and remembered: when nothing is found, the
// extension offers to install the package into it. In Restricted Mode the folder's own programs
// (its venv, the interpreter selected for it) are not run: the lookup says which wait for trust.
// Pure (no vscode import) so node's test runner covers it; the file system, the import check and
// the Python extension's answer are passed in.
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
  /** The interpreter the Python extension selected for the folder (omitted: that step is left
   * out). `python` undefined: none, and `note` says why (not installed, no interpreter). */
  interpreter?(): Promise<{ python?: string; note: string }>;
  /** Workspace folders to look in for `.venv` and `venv` (omitted: that step is left out). */
  venvFolders?: readonly string[];
  /** False in Restricted Mode: the folder's own interpreter and venvs are not run (default true). */
  trusted?: boolean;
}

/** A Python found without the package: where it came from, for the install offer. */
export interface PythonLacking {
  python: string;
  source: string;
}

export interface ServerCommand {
  command: string;
  args: string[];
  source: string;
}

export type Resolution =
  | { ok: true; server: ServerCommand; tried: string[]; waiting: string[] }
  | { ok: false; tried: string[]; lacking?: PythonLacking; waiting: string[] };

const MODULE_ARGS = ["-m", "mlir_lsp_asserts"];

/** A venv's interpreter (`bin/python`, `Scripts/python.exe` on Windows). */
export function venvPython(venv: string, platform: NodeJS.Platform): string {
  return platform === "win32" ? path.win32.join(venv, "Scripts", "python.exe") : path.posix.join(venv, "bin", "python");
}

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
  const waiting: string[] = [];
  let lacking: PythonLacking | undefined;
  /** A Python's server, or undefined (and noted) when it cannot import the package. */
  const viaPython = async (python: string, source: string, label: string): Promise<ServerCommand | undefined> => {
    if (env.canImport !== undefined && !(await env.canImport(python))) {
      tried.push(`${label} -> ${python}: cannot import mlir_lsp_asserts (pip install mlir-lsp-asserts into it)`);
      lacking ??= { python, source };
      return undefined;
    }
    tried.push(`${label} -> ${python} -m mlir_lsp_asserts`);
    return { command: python, args: MODULE_ARGS, source };
  };
  const found = (server: ServerCommand): Resolution => ({ ok: true, server, tried, waiting });
  if (settings.path.trim() !== "") {
    const r = locate(settings.path, env);
    tried.push(`mlirLsp.server.path = ${JSON.stringify(settings.path)} -> ${r.looked}`);
    if (r.found !== undefined) {
      return found({ command: r.found, args: [], source: "mlirLsp.server.path" });
    }
  }
  if (settings.pythonPath.trim() !== "") {
    const label = `mlirLsp.server.pythonPath = ${JSON.stringify(settings.pythonPath)}`;
    const r = locate(settings.pythonPath, env);
    if (r.found === undefined) {
      tried.push(`${label} -> ${r.looked}`);
    } else {
      const server = await viaPython(r.found, "mlirLsp.server.pythonPath", label);
      if (server !== undefined) {
        return found(server);
      }
    }
  }
  const trusted = env.trusted ?? true;
  if (env.interpreter !== undefined) {
    const label = "the Python extension's interpreter";
    if (!trusted) {
      tried.push(`${label}: not asked in Restricted Mode (the folder's interpreter runs only in a trusted folder)`);
    } else {
      const { python, note } = await env.interpreter();
      if (python === undefined) {
        tried.push(`${label}: ${note}`);
      } else {
        const server = await viaPython(python, label, `${label} (${note})`);
        if (server !== undefined) {
          return found(server);
        }
      }
    }
  }
  for (const folder of env.venvFolders ?? []) {
    for (const name of [".venv", "venv"]) {
      const python = venvPython(env.platform === "win32" ? path.win32.join(folder, name) : path.posix.join(folder, name), env.platform);
      if (!env.isExecutable(python)) {
        tried.push(`${python}: no such venv`);
      } else if (!trusted) {
        tried.push(`${python}: not run in Restricted Mode (a folder's own programs run only once it is trusted)`);
        waiting.push(python);
      } else {
        const server = await viaPython(python, `the workspace's ${name}`, `the workspace's ${name}`);
        if (server !== undefined) {
          return found(server);
        }
      }
    }
  }
  const r = locate("mlir-lsp", env);
  tried.push(r.looked);
  if (r.found !== undefined) {
    return found({ command: r.found, args: [], source: "PATH" });
  }
  return lacking === undefined ? { ok: false, tried, waiting } : { ok: false, tried, lacking, waiting };
}

export function notFoundMessage(tried: string[]): string {
  return "mlir-lsp: cannot find the language server. Tried: " + tried.map((t, i) => `(${i + 1}) ${t}`).join("; ") +
    ". Set mlirLsp.server.path to the mlir-lsp executable (e.g. ${workspaceFolder}/.venv/bin/mlir-lsp) " +
    "or mlirLsp.server.pythonPath to a Python with mlir-lsp-asserts installed.";
}

/** Restricted Mode, no server found: what waits for the folder to be trusted. */
export function waitingMessage(waiting: readonly string[]): string {
  return `mlir-lsp: waiting for this folder to be trusted: its ${waiting.join(" and ")} ` +
    `${waiting.length === 1 ? "is" : "are"} run only in a trusted folder (Restricted Mode). ` +
    "Trust the folder, or set mlirLsp.server.path in your user settings.";
}

/** The offer to install the package into a Python that lacks it. */
export function lackingMessage(lacking: PythonLacking, spec: string): string {
  return `mlir-lsp: ${lacking.source} (${lacking.python}) does not have the mlir-lsp-asserts package, ` +
    `and no other server was found. Install ${spec} there with pip?`;
}

/** pip's arguments for mlirLsp.server.installSpec: one requirement (a name, a pinned version, or a
 * wheel file: variables expanded, a relative path taken from the workspace folder). */
export function pipInstallArgs(spec: string, env: ResolveEnv): string[] {
  let req = expandVariables(spec, env);
  const isFile = /\.(whl|tar\.gz|zip)$/i.test(req) || req.startsWith("./") || req.startsWith("../");
  if (isFile && !path.isAbsolute(req) && env.workspaceFolder !== undefined && !req.includes("://")) {
    req = path.join(env.workspaceFolder, req);
  }
  return ["-m", "pip", "install", "--disable-pip-version-check", req];
}
