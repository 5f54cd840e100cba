import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, it } from "node:test";
import { canImportPackage, pythonEnv } from "../src/pythonRun";

describe("a Python run in the workspace folder", () => {
  it("never imports the folder's own mlir_lsp_asserts (Restricted Mode runs nothing of the folder)", async () => {
    // A cloned folder holding a package of that name: `python -c`/`-m` from the folder put it first
    // on sys.path, so checking for the package (or starting the server) ran the folder's code.
    const ws = fs.mkdtempSync(path.join(os.tmpdir(), "mlir-lsp-ws-"));
    try {
      const marker = path.join(ws, "pwned");
      fs.mkdirSync(path.join(ws, "mlir_lsp_asserts"));
      fs.writeFileSync(path.join(ws, "mlir_lsp_asserts", "__init__.py"),
        `open(${JSON.stringify(marker)}, "w").close()\n`);
      await canImportPackage("python3", ws);  // Debian's python3 (3.11+), without the package
      assert.equal(fs.existsSync(marker), false, "the folder's mlir_lsp_asserts/__init__.py ran");
      assert.equal(pythonEnv({ PATH: "/usr/bin" }).PATH, "/usr/bin");
    } finally {
      fs.rmSync(ws, { recursive: true, force: true });
    }
  });
});
