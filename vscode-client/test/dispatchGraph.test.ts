import { strict as assert } from "node:assert";
import { describe, it } from "node:test";
import { graphArguments, graphOutcome, graphPanelHtml, nodeLine, openIn, viewerAddress } from "../src/dispatchGraph";

describe("graphArguments", () => {
  it("asks the server not to open the URL itself (the extension does)", () => {
    assert.deepEqual(graphArguments("file:///ws/a.mlir"), { uri: "file:///ws/a.mlir", open: false });
    assert.deepEqual(graphArguments("file:///ws/a.mlir", 28), { uri: "file:///ws/a.mlir", line: 28, open: false });
  });
});

describe("graphOutcome", () => {
  it("opens the URL and says what is marked", () => {
    const o = graphOutcome("repro.mlir", {
      url: "http://127.0.0.1:8123/?data=x", dispatches: 4,
      marked: { assert: ["_initializer_1_dispatch_0"], only_because_of_asserts: ["_initializer_1_dispatch_0"], new: [] },
      selected: "_initializer_1_dispatch_0",
    });
    assert.equal(o.url, "http://127.0.0.1:8123/?data=x");
    assert.equal(o.isError, false);
    assert.equal(o.message, "mlir-lsp: dispatch graph of repro.mlir: 4 dispatches (marked: 1 assert, 1 " +
      "only_because_of_asserts); _initializer_1_dispatch_0 selected. Opened in Model Explorer.");
    assert.equal(graphOutcome("one.mlir", { url: "u", dispatches: 1 }).message,
      "mlir-lsp: dispatch graph of one.mlir: 1 dispatch. Opened in Model Explorer.");
  });
  it("turns errors and odd answers into one line, without a URL", () => {
    const e = graphOutcome("a.mlir", { error: "Model Explorer is not installed: pip install 'mlir-lsp[graph]'" });
    assert.equal(e.url, undefined);
    assert.equal(e.isError, true);
    assert.match(e.message, /a\.mlir: Model Explorer is not installed: pip install 'mlir-lsp\[graph\]'$/);
    assert.equal(graphOutcome("a.mlir", null).isError, true);
    assert.match(graphOutcome("a.mlir", { dispatches: 3 }).message, /no URL in the server's answer/);
  });
});

describe("the webview (dispatchGraph.openIn editor)", () => {
  it("frames the viewer's URL, allowed by origin only, and passes Model Explorer's selection on", () => {
    const html = graphPanelHtml("http://127.0.0.1:8123/?data=%7B%22a%22%3A1%7D&x=\"y", "abc123");
    assert.match(html, /frame-src http:\/\/127\.0\.0\.1:8123;/);
    assert.match(html, /script-src 'nonce-abc123'/);
    assert.ok(html.includes('<iframe src="http://127.0.0.1:8123/?data=%7B%22a%22%3A1%7D&amp;x=&quot;y"'), html);
    assert.ok(html.includes('d.cmd === "model-explorer-node-selected"'));
  });
  it("maps a selected node to its line; unknown nodes and odd values to none", () => {
    const lines = { _initializer_1_dispatch_0: 23, main_dispatch_0: 5 };
    assert.equal(nodeLine(lines, "_initializer_1_dispatch_0"), 23);
    assert.equal(nodeLine(lines, "toString"), undefined);
    assert.equal(nodeLine(lines, 7), undefined);
    assert.equal(nodeLine(undefined, "main_dispatch_0"), undefined);
    assert.equal(nodeLine({ bad: -1 }, "bad"), undefined);
  });
  it("opens in the browser unless the setting says editor", () => {
    assert.equal(openIn("editor"), "editor");
    assert.equal(openIn("browser"), "browser");
    assert.equal(openIn(undefined), "browser");
    assert.equal(openIn(42), "browser");
  });
});

describe("viewerAddress", () => {
  const raw = "http://127.0.0.1:41000/?data=%7B%7D";
  it("takes the editor's address of the viewer when it keeps the path (local, forwarded port)", () => {
    assert.deepEqual(viewerAddress(raw, raw), { url: raw, proxied: false });
    assert.deepEqual(viewerAddress(raw, "http://localhost:52000/?data=%7B%7D"), { url: "http://localhost:52000/?data=%7B%7D", proxied: false });
  });
  it("keeps the raw URL behind a path proxy (code-server's /proxy/PORT/), which Model Explorer cannot run under", () => {
    assert.deepEqual(viewerAddress(raw, "http://127.0.0.1:8080/proxy/41000/?data=%7B%7D"), { url: raw, proxied: true });
  });
});
