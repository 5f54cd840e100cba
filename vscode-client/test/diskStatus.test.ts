import { strict as assert } from "node:assert";
import { describe, it } from "node:test";
import {
  DiskFileState, MB, SYNC_LIMIT_BYTES, autoCountAllowed, diskMenu, diskView, fixMessage, needsDiskCheck, onRequestView,
} from "../src/diskStatus";

const file = (over: Partial<{ scheme: string; path: string; synced: boolean; bytes: number | undefined }> = {}) =>
  ({ scheme: "file", path: "/ws/model.mlir", synced: false, bytes: 62 * MB, ...over });

describe("needsDiskCheck", () => {
  it("checks an MLIR file above 50 MB that VS Code did not sync", () => {
    assert.equal(needsDiskCheck(file()), true);
    assert.equal(needsDiskCheck(file({ path: "/ws/model.mlirbc" })), true);
  });
  it("leaves synced documents, small files, other schemes and other files alone", () => {
    assert.equal(needsDiskCheck(file({ synced: true })), false);
    assert.equal(needsDiskCheck(file({ bytes: SYNC_LIMIT_BYTES })), false); // VS Code syncs up to the limit
    assert.equal(needsDiskCheck(file({ bytes: undefined })), false); // could not stat it
    assert.equal(needsDiskCheck(file({ scheme: "untitled" })), false);
    assert.equal(needsDiskCheck(file({ path: "/ws/model.mlir.txt" })), false);
    assert.equal(needsDiskCheck(file({ path: "/ws/model.py" })), false);
  });
});

describe("dispatch.autoMaxMegabytes in the status bar", () => {
  it("counts on open only up to the limit", () => {
    assert.equal(autoCountAllowed(16 * MB, 16), true);
    assert.equal(autoCountAllowed(47 * MB, 16), false);
    assert.equal(autoCountAllowed(1, 0), false);
  });
  it("says why a file is counted only on request", () => {
    const v = onRequestView(47 * MB, 16);
    assert.equal(v.text, "$(circuit-board) dispatches: ?");
    assert.match(v.tooltip, /47 MB, above dispatch.autoMaxMegabytes \(16 MB\)/);
    assert.match(v.tooltip, /Click to count/);
  });
});

describe("the status bar of a file checked from disk", () => {
  const state = (over: Partial<DiskFileState> = {}): DiskFileState =>
    ({ name: "clip.mlir", bytes: 62 * MB, checking: false, counting: false, ...over });

  it("says it is above the sync limit and was checked from disk", () => {
    const v = diskView(state({ result: { findings: 4, fixable: 4, error: null, megabytes: 62 } }));
    assert.equal(v.text, "$(database) mlir-lsp: 62 MB, above VS Code's 50 MB sync limit — checked from disk: 4 findings");
    assert.match(v.tooltip, /clip.mlir is 62 MB, above VS Code's 50 MB sync limit/);
    assert.match(v.tooltip, /4 findings \(4 fixable\) in the Problems panel/);
    assert.match(v.tooltip, /Click for: count dispatches, fix the file on disk/);
    assert.equal(v.isError, false);
    assert.match(diskView(state({ result: { findings: 1, fixable: 0 } })).text, /checked from disk: 1 finding$/);
  });
  it("shows the check running, a failure, and the notes", () => {
    assert.match(diskView(state({ checking: true })).text, /^\$\(sync~spin\) .* checking from disk$/);
    const failed = diskView(state({ result: { error: "cannot read: Permission denied" } }));
    assert.ok(failed.isError && failed.text.includes("check from disk failed"));
    assert.match(failed.tooltip, /Permission denied/);
    const bc = diskView(state({ result: { findings: 0, notes: ["read from MLIR bytecode: positions refer to its textual form"] } }));
    assert.match(bc.tooltip, /Note: read from MLIR bytecode/);
  });
  it("adds the dispatch count asked for, or the spinner while it runs", () => {
    const done = { findings: 4, fixable: 4 };
    assert.match(diskView(state({ result: done, counting: true })).text, /· \$\(sync~spin\) dispatches$/);
    const v = diskView(state({ result: done, count: { flow_dispatches: 269, profile: "default", what_if: { flow_dispatches: 269, saved: 0 } } }));
    assert.match(v.text, /checked from disk: 4 findings · 269 dispatches \(what-if 269, 0\)$/);
    assert.match(v.tooltip, /269 dispatches at dispatch-creation/);
    assert.doesNotMatch(v.tooltip, /Click to recompute/);
    assert.match(diskView(state({ result: done, count: { error: "iree-compile not found" } })).text, /· dispatches: failed$/);
  });
  it("offers the count, both fixes when something is fixable, and a new check", () => {
    const actions = (s: DiskFileState) => diskMenu(s, "default").map((i) => i.action);
    assert.deepEqual(actions(state({ result: { findings: 4, fixable: 4 } })), ["count", "strip", "assume", "problems", "check"]);
    assert.deepEqual(actions(state({ result: { findings: 1, fixable: 0 }, counting: true })), ["problems", "check"]);
    assert.deepEqual(actions(state({ result: { findings: 0, fixable: 0 } })), ["count", "check"]);
    const strip = diskMenu(state({ result: { findings: 4, fixable: 4 } }), "sdxl")[1];
    assert.equal(strip.label, "$(wrench) Fix the file on disk (strip asserts)");
    assert.match(diskMenu(state({ result: { findings: 4, fixable: 4 } }), "sdxl")[0].detail, /profile sdxl.*62 MB/);
  });
});

describe("fixMessage", () => {
  it("says what was fixed, nothing, or the error", () => {
    assert.deepEqual(fixMessage("clip.mlir", "assume", { fixed: 4, remaining: 0, error: null }),
      { text: "mlir-lsp: clip.mlir: 4 asserts fixed on disk (rewrite to util.assume.int); 0 findings left.", isError: false });
    assert.match(fixMessage("clip.mlir", "strip", { fixed: 0, remaining: 1 }).text, /nothing to fix on disk \(1 finding left\)/);
    const e = fixMessage("clip.mlir", "strip", { fixed: 0, remaining: 4, error: "file is read-only; not fixed" });
    assert.ok(e.isError && e.text.endsWith("(strip asserts) failed: file is read-only; not fixed"));
  });
});
