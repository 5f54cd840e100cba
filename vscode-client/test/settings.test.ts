import { strict as assert } from "node:assert";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";
import { DispatchResult, computingView, resultView } from "../src/dispatchStatus";
import { RestartPolicy } from "../src/restartPolicy";
import { JsonObject, flatten, packageDefaults, serverSettings } from "../src/settings";

const ROOT = path.resolve(__dirname, "..", "..");
const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")) as Parameters<typeof packageDefaults>[0];

describe("serverSettings", () => {
  it("drops the client's own keys and keeps the server's", () => {
    const s = serverSettings({
      server: { path: "/x", pythonPath: "" }, trace: { server: "off" }, statusBar: { enabled: true },
      select: ["MLA"], ignore: ["MLA003"], severity: { MLA003: "warning" }, fixMode: "assume", profiles: {},
      dispatch: { enabled: true, profile: "sdxl", flags: ["--iree-opt-level=O1"], compilerPath: "~/iree-compile" },
    }, (p) => p.replace("~", "/home/u"));
    assert.deepEqual(s, {
      select: ["MLA"], ignore: ["MLA003"], severity: { MLA003: "warning" }, fixMode: "assume", profiles: {},
      dispatch: { enabled: true, profile: "sdxl", flags: ["--iree-opt-level=O1"], compilerPath: "/home/u/iree-compile" },
    });
  });
  it("sends an empty compiler path as null and copies out of proxies", () => {
    const section = { dispatch: { compilerPath: "  " }, get: () => 1, has: () => true };
    assert.deepEqual(serverSettings(section, (p) => p), { dispatch: { compilerPath: null } });
    assert.deepEqual(serverSettings(undefined, (p) => p), {});
  });
});

describe("package.json settings", () => {
  const defaults = packageDefaults(pkg);
  it("declares a description for every setting", () => {
    for (const [name, prop] of Object.entries(pkg.contributes.configuration.properties)) {
      const p = prop as { description?: string; markdownDescription?: string };
      assert.ok((p.description ?? p.markdownDescription ?? "").length > 20, `${name} has no description`);
    }
  });
  // One source of truth: the defaults are the server's own (`mlir-lsp --show-settings`).
  const server = process.env.MLIR_LSP_SERVER ?? path.resolve(ROOT, "..", ".venv", "bin", "mlir-lsp");
  it("has the server's defaults (mlir-lsp --show-settings)", { skip: !fs.existsSync(server) && `no ${server}` }, () => {
    const shown = JSON.parse(execFileSync(server, ["--show-settings"], { encoding: "utf8" })) as JsonObject;
    const expected = flatten(shown, "", new Set(["severity", "profiles"]));
    assert.deepEqual(defaults, expected);
  });
});

describe("status bar text", () => {
  it("shows the count and the what-if delta", () => {
    const r: DispatchResult = { flow_dispatches: 4, profile: "default", what_if: { flow_dispatches: 3, saved: 1, mode: "strip" }, seconds: 0.6 };
    const v = resultView(r);
    assert.equal(v.text, "$(circuit-board) 4 dispatches (what-if 3, -1)");
    assert.match(v.tooltip, /3 with the asserts removed \(-1\)/);
    assert.equal(v.isError, false);
  });
  it("shows one dispatch, no what-if, errors and the spinner", () => {
    assert.equal(resultView({ flow_dispatches: 1, what_if: null }).text, "$(circuit-board) 1 dispatch");
    const e = resultView({ error: "iree-compile not found" });
    assert.ok(e.isError && e.tooltip.includes("iree-compile not found"));
    assert.match(computingView("sdxl").text, /sync~spin/);
  });
  it("shows how the count differs from the baseline, and why it cannot", () => {
    const r: DispatchResult = { flow_dispatches: 4, what_if: { flow_dispatches: 3 },
      baseline: { file: "/w/b.json", flow_dispatches: 3, delta: 1, new: [{ name: "_initializer_1_dispatch_0" }] } };
    const v = resultView(r);
    assert.equal(v.text, "$(circuit-board) 4 dispatches (what-if 3, -1), +1 vs baseline");
    assert.match(v.tooltip, /baseline \/w\/b\.json: 3 \(\+1\); new: _initializer_1_dispatch_0/);
    const same = resultView({ flow_dispatches: 3, baseline: { flow_dispatches: 3, delta: 0, new: [] } });
    assert.equal(same.text, "$(circuit-board) 3 dispatches");
    const bad = resultView({ flow_dispatches: 3, baseline: { file: "b.json", error: "b.json: baseline file not found" } });
    assert.equal(bad.text, "$(circuit-board) 3 dispatches");
    assert.match(bad.tooltip, /baseline: b\.json: baseline file not found/);
  });
  it("says n/a, not failed, when the compiler cannot read the file's IREE syntax", () => {
    const v = resultView({ error: "n/a (older IREE syntax): iree-compile 3.13 cannot read this file's IREE syntax (unknown Flow type: dispatch.tensor)", unsupported_syntax: true });
    assert.equal(v.text, "$(info) dispatches: n/a (older IREE syntax)");
    assert.equal(v.isError, false);
    assert.match(v.tooltip, /unknown Flow type: dispatch\.tensor/);
  });
});

describe("RestartPolicy", () => {
  it("restarts up to the limit within the window, then again after it", () => {
    const p = new RestartPolicy(2, 1000);
    assert.equal(p.shouldRestart(0), true);
    assert.equal(p.shouldRestart(10), true);
    assert.equal(p.shouldRestart(20), false);
    assert.equal(p.shouldRestart(1500), true);
    p.reset();
    assert.equal(p.shouldRestart(1501), true);
  });
  it("never restarts with a limit of 0", () => {
    assert.equal(new RestartPolicy(0).shouldRestart(0), false);
  });
});
