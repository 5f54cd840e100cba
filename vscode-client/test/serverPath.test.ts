import { strict as assert } from "node:assert";
import { describe, it } from "node:test";
import {
  ResolveEnv, expandVariables, lackingMessage, notFoundMessage, pipInstallArgs, resolveServer, waitingMessage,
} from "../src/serverPath";

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

describe("resolveServer: the Python extension, the workspace's venvs, trust", () => {
  const venv = "/ws/proj/.venv/bin/python";
  const plainVenv = "/ws/proj/venv/bin/python";
  const selected = "/opt/conda/bin/python";
  const steps = (over: Partial<ResolveEnv>, executables: string[], importing: string[] = executables): ResolveEnv =>
    env(executables, {
      venvFolders: ["/ws/proj"],
      interpreter: () => Promise.resolve({ python: selected, note: "selected for /ws/proj" }),
      canImport: (p) => importing.includes(p),
      ...over,
    });

  it("the order: settings, the Python extension's interpreter, .venv, venv, PATH; each step noted", async () => {
    const all = [selected, venv, plainVenv, "/usr/bin/mlir-lsp"];
    const r1 = await resolveServer({ path: "", pythonPath: "" }, steps({}, all));
    assert.ok(r1.ok);
    assert.deepEqual(r1.server, { command: selected, args: ["-m", "mlir_lsp_asserts"], source: "the Python extension's interpreter" });
    const r2 = await resolveServer({ path: "", pythonPath: "" }, steps({}, all, [venv, plainVenv]));
    assert.ok(r2.ok && r2.server.command === venv && r2.server.source === "the workspace's .venv");
    assert.match(r2.tried[0] ?? "", /the Python extension's interpreter \(selected for \/ws\/proj\) -> \/opt\/conda\/bin\/python: cannot import/);
    const r3 = await resolveServer({ path: "", pythonPath: "" }, steps({}, all, [plainVenv]));
    assert.ok(r3.ok && r3.server.command === plainVenv && r3.server.source === "the workspace's venv");
    const r4 = await resolveServer({ path: "", pythonPath: "" }, steps({}, all, []));
    assert.ok(r4.ok && r4.server.source === "PATH");
    assert.equal(r4.tried.length, 4);
    // A setting still comes first.
    const r5 = await resolveServer({ path: "/usr/bin/mlir-lsp", pythonPath: "" }, steps({}, all));
    assert.ok(r5.ok && r5.server.source === "mlirLsp.server.path");
  });
  it("no Python extension: its step says why and the venv is used", async () => {
    const r = await resolveServer({ path: "", pythonPath: "" },
      steps({ interpreter: () => Promise.resolve({ note: "the Python extension (ms-python.python) is not installed" }) }, [venv]));
    assert.ok(r.ok && r.server.command === venv);
    assert.deepEqual(r.tried, [
      "the Python extension's interpreter: the Python extension (ms-python.python) is not installed",
      "/ws/proj/.venv/bin/python -> /ws/proj/.venv/bin/python -m mlir_lsp_asserts".replace(/^\/ws\/proj\/\.venv\/bin\/python ->/, "the workspace's .venv ->"),
    ]);
  });
  it("a venv without the package: nothing found, the offer names that Python", async () => {
    const r = await resolveServer({ path: "", pythonPath: "" },
      steps({ interpreter: () => Promise.resolve({ note: "not installed" }) }, [plainVenv], []));
    assert.equal(r.ok, false);
    assert.ok(!r.ok && r.lacking !== undefined);
    assert.deepEqual(!r.ok && r.lacking, { python: plainVenv, source: "the workspace's venv" });
    assert.match(r.tried.join("\n"), /\/ws\/proj\/\.venv\/bin\/python: no such venv/);
    assert.match(lackingMessage({ python: plainVenv, source: "the workspace's venv" }, "mlir-lsp-asserts==0.1.0"),
      /^mlir-lsp: the workspace's venv \(\/ws\/proj\/venv\/bin\/python\) does not have the mlir-lsp-asserts package.*Install mlir-lsp-asserts==0.1.0 there with pip\?$/);
  });
  it("Restricted Mode: neither the interpreter nor a venv is run; the lookup says which wait", async () => {
    const ran: string[] = [];
    const r = await resolveServer({ path: "", pythonPath: "" }, steps({
      trusted: false,
      interpreter: () => {
        ran.push("interpreter");
        return Promise.resolve({ python: selected, note: "x" });
      },
      canImport: (p) => {
        ran.push(p);
        return true;
      },
    }, [selected, venv, plainVenv]));
    assert.deepEqual(ran, []);
    assert.equal(r.ok, false);
    assert.deepEqual(r.waiting, [venv, plainVenv]);
    assert.match(r.tried[0] ?? "", /not asked in Restricted Mode/);
    assert.match(waitingMessage(r.waiting), /^mlir-lsp: waiting for this folder to be trusted: its \/ws\/proj\/\.venv\/bin\/python and \/ws\/proj\/venv\/bin\/python are run only in a trusted folder/);
    // mlir-lsp on PATH (the user's own) still runs there.
    const onPath = await resolveServer({ path: "", pythonPath: "" }, steps({ trusted: false }, [venv, "/usr/bin/mlir-lsp"]));
    assert.ok(onPath.ok && onPath.server.source === "PATH" && onPath.waiting.length === 1);
  });
  it("Windows venvs: Scripts\\python.exe", async () => {
    const py = "C:\\ws\\.venv\\Scripts\\python.exe";
    const r = await resolveServer({ path: "", pythonPath: "" },
      steps({ platform: "win32", venvFolders: ["C:\\ws"], env: { PATH: "" }, interpreter: undefined }, [py]));
    assert.ok(r.ok && r.server.command === py);
  });
});

describe("pipInstallArgs", () => {
  const e = env([]);
  it("passes a name or a pinned version as it is", () => {
    assert.deepEqual(pipInstallArgs("mlir-lsp-asserts", e), ["-m", "pip", "install", "--disable-pip-version-check", "mlir-lsp-asserts"]);
    assert.equal(pipInstallArgs("mlir-lsp-asserts==0.1.0", e).at(-1), "mlir-lsp-asserts==0.1.0");
    assert.equal(pipInstallArgs("mlir-lsp-asserts @ https://x.org/a.whl", e).at(-1), "mlir-lsp-asserts @ https://x.org/a.whl");
  });
  it("takes a wheel file from the workspace folder, variables expanded", () => {
    assert.equal(pipInstallArgs("wheels/mlir_lsp_asserts-0.1.0-py3-none-any.whl", e).at(-1), "/ws/proj/wheels/mlir_lsp_asserts-0.1.0-py3-none-any.whl");
    assert.equal(pipInstallArgs("${userHome}/w/x.whl", e).at(-1), "/home/u/w/x.whl");
    assert.equal(pipInstallArgs("https://x.org/a.whl", e).at(-1), "https://x.org/a.whl");
  });
});
