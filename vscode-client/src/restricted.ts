// Restricted Mode (a folder the user has not trusted). Checking text runs nothing from the
// folder, so findings, fixes, hover and navigation work there; the settings that name a program
// or compiler flags are package.json's `restrictedConfigurations`: VS Code then ignores the
// folder's values for them (.vscode/settings.json of a cloned repository) until it is trusted,
// and the server runs with the user's own. Pure (no vscode import) so node's test runner covers it.

/** What a setting may run: a program (the server, the compiler), a package to install, or flags given to the compiler
 * (flags can load plugins and write files). Not restricted: `dispatch.profile` (a name among the
 * built-in profiles and the user's own `profiles`), `dispatch.baseline` (a file that is only read,
 * the folder's own by design). */
export const RESTRICTED_SETTINGS: readonly string[] = [
  "mlirLsp.server.path",
  "mlirLsp.server.pythonPath",
  "mlirLsp.server.installSpec",
  "mlirLsp.dispatch.compilerPath",
  "mlirLsp.dispatch.flags",
  "mlirLsp.profiles",
];

/** The status bar's note in Restricted Mode; `ignored`: the restricted settings the folder sets. */
export function restrictedNote(ignored: readonly string[]): { suffix: string; tooltip: string } {
  // (VS Code hides the folder's values of restricted settings from `inspect` too: then all are named)
  const names = ignored.length > 0 ? ignored : RESTRICTED_SETTINGS;
  const what = `this folder's own ${names.join(", ")} ${names.length === 1 ? "is" : "are"} not used`;
  return {
    suffix: " $(shield)",
    tooltip: `Restricted Mode: ${what} until you trust the folder; the count runs with your user settings.`,
  };
}
