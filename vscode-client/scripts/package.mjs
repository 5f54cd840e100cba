// `npm run package [-- VERSION] [--out FILE]`: vsce package (the .vsix of the bundled extension;
// default --out mlir-lsp.vsix), its output shown, and a failure when vsce printed a warning (no
// .vscodeignore, too many files, a star activation, no repository): the package a user installs
// is clean. Any other vsce argument is passed on (the release gives the version).
import { spawnSync } from "node:child_process";
import * as path from "node:path";

const args = process.argv.slice(2);
if (!args.includes("--out")) {
  args.push("--out", "mlir-lsp.vsix");
}
const vsce = path.join(import.meta.dirname, "..", "node_modules", ".bin", "vsce");
const r = spawnSync(vsce, ["package", "--no-dependencies", "--skip-license", ...args], {
  encoding: "utf8",
  env: { ...process.env, FORCE_COLOR: "0" },
});
const text = (r.stdout ?? "") + (r.stderr ?? "");
process.stdout.write(text);
if (r.status !== 0) {
  process.exit(r.status ?? 1);
}
const warnings = text.split("\n").filter((line) => /\bWARNING\b|^::warning::/.test(line));
if (warnings.length > 0) {
  process.stderr.write(`vsce package printed ${warnings.length} warning(s):\n${warnings.join("\n")}\n`);
  process.exit(1);
}
