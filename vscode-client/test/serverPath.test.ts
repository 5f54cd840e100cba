import { strict as assert } from "node:assert";
import { describe, it } from "node:test";
import { ResolveEnv, expandVariables, notFoundMessage, resolveServer } from "../src/serverPath";

function env(executables: string[], over: Partial<ResolveEnv> = {}): ResolveEnv {
  const set = new Set(executables);
  return {
    workspaceFolder: "/ws/proj",
    home: "/home/u",
    env: { PATH: "/usr/local/bin:/usr/bin", VENV: "/opt/venv" },
    platform: "linux",
    isExecutable: (p) => set.has(p),
    ...over,
  };
}

describe("expandVariables", () => {
  it("expands ${workspaceFolder}, ~, ${userHome} and ${env:NAME}", () => {
    const e = env([]);
    assert.equal(expandVariables("${workspaceFolder}/.venv/bin/mlir-lsp", e), "/ws/proj/.venv/bin/mlir-lsp");
    assert.equal(expandVariables("~/bin/mlir-lsp", e), "/home/u/bin/mlir-lsp");
    assert.equal(expandVariables("~", e), "/home/u");
    assert.equal(expandVariables("${userHome}/x", e), "/home/u/x");
    assert.equal(expandVariables("${env:VENV}/bin/python", e), "/opt/venv/bin/python");
    assert.equal(expandVariables("${env:NOPE}/x", e), "/x");
    assert.equal(expandVariables("${workspaceFolderBasename}", e), "proj");
  });
  it("leaves ~ inside a path and unknown variables alone", () => {
    const e = env([]);
    assert.equal(expandVariables("/a/~b", e), "/a/~b");
    assert.equal(expandVariables("${unknown}/x", e), "${unknown}/x");
    assert.equal(expandVariables("${workspaceFolder}/x", env([], { workspaceFolder: undefined })), "${workspaceFolder}/x");
  });
});

describe("resolveServer", () => {
  it("uses mlirLsp.server.path first, expanded", async () => {
    const r = await resolveServer({ path: "${workspaceFolder}/.venv/bin/mlir-lsp", pythonPath: "/usr/bin/python3" },
      env(["/ws/proj/.venv/bin/mlir-lsp", "/usr/bin/python3", "/usr/bin/mlir-lsp"]));
    assert.ok(r.ok);
    assert.deepEqual(r.server, { command: "/ws/proj/.venv/bin/mlir-lsp", args: [], source: "mlirLsp.server.path" });
  });
  it("takes a relative path from the workspace folder and a bare name from PATH", async () => {
    const rel = await resolveServer({ path: ".venv/bin/mlir-lsp", pythonPath: "" }, env(["/ws/proj/.venv/bin/mlir-lsp"]));
    assert.ok(rel.ok && rel.server.command === "/ws/proj/.venv/bin/mlir-lsp");
    const bare = await resolveServer({ path: "my-mlir-lsp", pythonPath: "" }, env(["/usr/bin/my-mlir-lsp"]));
    assert.ok(bare.ok && bare.server.command === "/usr/bin/my-mlir-lsp");
  });
  it("falls back to the Python interpreter with -m mlir_lsp_asserts", async () => {
    const r = await resolveServer({ path: "~/missing", pythonPath: "~/venv/bin/python" }, env(["/home/u/venv/bin/python"]));
    assert.ok(r.ok);
    assert.deepEqual(r.server, { command: "/home/u/venv/bin/python", args: ["-m", "mlir_lsp_asserts"], source: "mlirLsp.server.pythonPath" });
    assert.match(r.tried[0] ?? "", /\/home\/u\/missing: not found/);
  });
  it("skips a Python that cannot import the package", async () => {
    const r = await resolveServer({ path: "", pythonPath: "python3" },
      env(["/usr/bin/python3", "/usr/local/bin/mlir-lsp"], { canImport: () => false }));
    assert.ok(r.ok);
    assert.equal(r.server.source, "PATH");
    assert.equal(r.server.command, "/usr/local/bin/mlir-lsp");
    assert.match(r.tried[0] ?? "", /cannot import mlir_lsp_asserts/);
  });
  it("waits for an import check that answers later (a child process, not blocking the host)", async () => {
    const r = await resolveServer({ path: "", pythonPath: "python3" },
      env(["/usr/bin/python3"], { canImport: () => new Promise((res) => setTimeout(() => res(true), 5)) }));
    assert.ok(r.ok);
    assert.deepEqual(r.ok && r.server.args, ["-m", "mlir_lsp_asserts"]);
  });
  it("finds mlir-lsp on PATH when nothing is set", async () => {
    const r = await resolveServer({ path: "", pythonPath: "" }, env(["/usr/bin/mlir-lsp"]));
    assert.ok(r.ok);
    assert.deepEqual(r.server, { command: "/usr/bin/mlir-lsp", args: [], source: "PATH" });
  });
  it("uses PATHEXT on Windows", async () => {
    const r = await resolveServer({ path: "", pythonPath: "" },
      env(["C:\\tools\\mlir-lsp.EXE"], { platform: "win32", env: { PATH: "C:\\tools", PATHEXT: ".EXE" } }));
    assert.ok(r.ok && r.server.command === "C:\\tools\\mlir-lsp.EXE");
  });
  it("lists everything it tried when nothing works", async () => {
    const r = await resolveServer({ path: "/opt/x/mlir-lsp", pythonPath: "/opt/py" }, env([]));
    assert.equal(r.ok, false);
    assert.equal(r.tried.length, 3);
    const msg = notFoundMessage(r.tried);
    assert.match(msg, /\(1\) mlirLsp\.server\.path = "\/opt\/x\/mlir-lsp" -> \/opt\/x\/mlir-lsp: not found/);
    assert.match(msg, /\(2\) mlirLsp\.server\.pythonPath = "\/opt\/py"/);
    assert.match(msg, /\(3\) mlir-lsp on PATH: not found/);
  });
});
