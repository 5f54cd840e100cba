// The interpreter the Python extension (ms-python.python) selected for a folder, through its
// published API (npm @vscode/python-extension), and its change event. Nothing is asked, and the
// Python extension is not activated, when it is not installed.
import * as vscode from "vscode";
import { PVSC_EXTENSION_ID, PythonExtension } from "@vscode/python-extension";
import { errorText } from "./documents";

export interface Interpreter {
  /** The interpreter's executable; undefined when there is none. */
  python?: string;
  /** Where it came from, or why there is none (for the log). */
  note: string;
}

function installed(): boolean {
  return vscode.extensions.getExtension(PVSC_EXTENSION_ID) !== undefined;
}

/** The active environment's interpreter for `folder` (the Python extension's selection). */
export async function selectedInterpreter(folder: vscode.Uri | undefined): Promise<Interpreter> {
  if (!installed()) {
    return { note: `the Python extension (${PVSC_EXTENSION_ID}) is not installed` };
  }
  try {
    const api = await PythonExtension.api();
    const active = api.environments.getActiveEnvironmentPath(folder);
    const env = await api.environments.resolveEnvironment(active);
    const python = env?.executable.uri?.fsPath;
    return python === undefined
      ? { note: `its environment ${active.path} has no interpreter` }
      : { python, note: `selected for ${folder?.fsPath ?? "the window"}: ${active.path}` };
  } catch (e) {
    return { note: `the Python extension did not answer: ${errorText(e)}` };
  }
}

/** Calls `changed` when the Python extension's selected interpreter changes (if it is installed). */
export function onInterpreterChange(changed: (path: string) => void): vscode.Disposable {
  const subs: vscode.Disposable[] = [];
  let disposed = false;
  if (installed()) {
    PythonExtension.api().then((api) => {
      if (!disposed) {
        subs.push(api.environments.onDidChangeActiveEnvironmentPath((e) => changed(e.path)));
      }
    }, () => undefined);
  }
  return {
    dispose: () => {
      disposed = true;
      for (const s of subs) {
        s.dispose();
      }
    },
  };
}
