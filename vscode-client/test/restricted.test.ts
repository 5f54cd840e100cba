import { strict as assert } from "node:assert";
import * as fs from "node:fs";
import * as path from "node:path";
import { describe, it } from "node:test";
import { RESTRICTED_SETTINGS, restrictedNote } from "../src/restricted";

interface Manifest {
  capabilities: { untrustedWorkspaces: { supported: string; description: string; restrictedConfigurations: string[] } };
  contributes: { configuration: { properties: Record<string, unknown> } };
}
const manifest = JSON.parse(fs.readFileSync(path.join(__dirname, "..", "..", "package.json"), "utf8")) as Manifest;

describe("Restricted Mode", () => {
  it("package.json declares limited support with the restricted settings", () => {
    const trust = manifest.capabilities.untrustedWorkspaces;
    assert.equal(trust.supported, "limited");
    assert.deepEqual(trust.restrictedConfigurations, RESTRICTED_SETTINGS);
    for (const name of RESTRICTED_SETTINGS) {
      assert.ok(name in manifest.contributes.configuration.properties, name);
    }
    assert.ok(trust.description.length > 20);
  });
  it("says which of the folder's settings wait for trust", () => {
    const note = restrictedNote(["mlirLsp.dispatch.flags", "mlirLsp.dispatch.compilerPath"]);
    assert.match(note.tooltip, /^Restricted Mode: this folder's own mlirLsp.dispatch.flags, mlirLsp.dispatch.compilerPath are not used until you trust/);
    assert.match(restrictedNote([]).tooltip, /^Restricted Mode: this folder's own mlirLsp.server.path, .*mlirLsp.profiles are not used/);
  });
});
