// The `mlirLsp` settings section as the server reads it. Pure: the extension passes in what
// vscode.workspace.getConfiguration("mlirLsp") returned.

/** Keys of the section that only the extension uses; the server never sees them. */
export const CLIENT_ONLY_KEYS: readonly string[] = ["server", "trace", "statusBar", "bytecode", "dispatchGraph"];

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

function isObject(v: unknown): v is JsonObject {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** A plain copy of the section (VS Code's configuration objects carry functions and proxies). */
function plain(v: unknown): Json {
  if (Array.isArray(v)) {
    return v.map(plain);
  }
  if (isObject(v)) {
    const out: JsonObject = {};
    for (const [k, x] of Object.entries(v)) {
      if (typeof x !== "function" && x !== undefined) {
        out[k] = plain(x);
      }
    }
    return out;
  }
  if (typeof v === "boolean" || typeof v === "number" || typeof v === "string") {
    return v;
  }
  return null;
}

/**
 * The server's settings from the section: client-only keys dropped, `dispatch.compilerPath`
 * expanded like the server path (empty -> null), `dispatch.flags` given as one string split
 * into a list by the server as it is.
 */
export function serverSettings(section: unknown, expand: (p: string) => string): JsonObject {
  const src = plain(section);
  const out: JsonObject = {};
  if (!isObject(src)) {
    return out;
  }
  for (const [k, v] of Object.entries(src)) {
    if (!CLIENT_ONLY_KEYS.includes(k)) {
      out[k] = v;
    }
  }
  const d = out.dispatch;
  if (isObject(d)) {
    const cp = d.compilerPath;
    d.compilerPath = typeof cp === "string" && cp.trim() !== "" ? expand(cp) : null;
  }
  return out;
}

/** `{"a": {"b": 1}}` -> `{"a.b": 1}`, the way package.json names the settings. */
export function flatten(obj: JsonObject, prefix = "", leafKeys: ReadonlySet<string> = new Set()): Record<string, Json> {
  const out: Record<string, Json> = {};
  for (const [k, v] of Object.entries(obj)) {
    const key = prefix === "" ? k : `${prefix}.${k}`;
    if (isObject(v) && Object.keys(v).length > 0 && !leafKeys.has(key)) {
      Object.assign(out, flatten(v, key, leafKeys));
    } else {
      out[key] = v;
    }
  }
  return out;
}

/** The server-side defaults that package.json declares (`mlirLsp.X` -> default), client keys left out. */
export function packageDefaults(pkg: { contributes: { configuration: { properties: Record<string, { default?: unknown }> } } }): Record<string, Json> {
  const out: Record<string, Json> = {};
  for (const [name, prop] of Object.entries(pkg.contributes.configuration.properties)) {
    const key = name.replace(/^mlirLsp\./, "");
    if (!CLIENT_ONLY_KEYS.includes(key.split(".")[0] ?? "")) {
      out[key] = plain(prop.default);
    }
  }
  return out;
}
