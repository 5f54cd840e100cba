// The language client: the server command (lookup.ts), its options (settings pushed and pulled,
// restart on crash with a limit, the code lenses' commands handed to the extension's features),
// started and restarted one step at a time (session.ts).
import * as os from "node:os";
import * as vscode from "vscode";
import {
  CloseAction,
  DidChangeConfigurationNotification,
  DocumentDiagnosticRequest,
  ErrorAction,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  State,
} from "vscode-languageclient/node";
import { DispatchResult } from "./dispatchStatus";
import { SECTION, config, isMlir } from "./documents";
import { RestartPolicy } from "./restartPolicy";
import { Session } from "./session";
import { JsonObject, serverSettings } from "./settings";
import { expandPath, findServer } from "./lookup";
import { log, output, showLog } from "./log";
import { pythonEnv } from "./pythonRun";

// The server's word that a count finished (the ones it schedules on open, save and idle too).
const COUNTED_NOTIFICATION = "mlirLsp/dispatchCounted";

/** What the client hands to the rest of the extension. */
export interface ClientHooks {
  /** A count the server finished. */
  counted(p: DispatchResult & { uri?: string }): void;
  /** The server is running (again). */
  running(): void;
  /** Where the server stands, for the language status item: its source, or why none runs. */
  state(text: string, ok: boolean): void;
  /** A code lens's command: handled by the extension (a promise), or undefined for the server. */
  executeCommand(command: string, args: unknown[]): Promise<unknown> | undefined;
}

let session: Session<LanguageClient> | undefined;
let starting: Promise<void> | undefined;
let source: string | undefined;

/** The section as the server reads it (client keys dropped, paths expanded). */
export function currentSettings(): JsonObject {
  return serverSettings(vscode.workspace.getConfiguration().get(SECTION), expandPath);
}

/** The running client (undefined while none, or between a stop and the next start). */
export function currentClient(): LanguageClient | undefined {
  return session?.client;
}

/** Resolves once the last start finished (or failed). */
export function ready(): Promise<void> {
  return (starting ?? Promise.resolve()).catch(() => undefined);
}

/** Where the running server came from (`mlirLsp.server.path`, `PATH`, ...), if one runs. */
export function serverSource(): string | undefined {
  return currentClient() === undefined ? undefined : source;
}

/** The client, or an error message that no server runs. */
export function runningClient(): LanguageClient | undefined {
  const client = currentClient();
  if (client === undefined || !client.isRunning()) {
    void vscode.window.showErrorMessage("mlir-lsp: the language server is not running (see the 'mlir-lsp' output).");
    return undefined;
  }
  return client;
}

/** Settings change what the server reports: pull the open documents' diagnostics again. */
function repullDiagnostics(): void {
  const feature = currentClient()?.getFeature(DocumentDiagnosticRequest.method);
  for (const doc of vscode.workspace.textDocuments.filter(isMlir)) {
    feature?.getProvider(doc)?.onDidChangeDiagnosticsEmitter.fire();
  }
}

function clientOptions(hooks: ClientHooks, policy: RestartPolicy): LanguageClientOptions {
  return {
    documentSelector: [
      { scheme: "file", language: "mlir" },
      { scheme: "untitled", language: "mlir" },
    ],
    outputChannel: output(),
    initializationOptions: { [SECTION]: currentSettings() },
    synchronize: { configurationSection: SECTION },
    errorHandler: {
      error: (_error, _message, count) => ({ action: (count ?? 0) <= 3 ? ErrorAction.Continue : ErrorAction.Shutdown }),
      closed: () => {
        if (policy.shouldRestart(Date.now())) {
          log("[server] the server stopped; restarting it");
          return { action: CloseAction.Restart };
        }
        return {
          action: CloseAction.DoNotRestart,
          message: "mlir-lsp: the server crashed too often in the last 3 minutes and is not restarted; " +
            "see the 'mlir-lsp' output, then run 'mlir-lsp: Restart the language server'.",
        };
      },
    },
    middleware: {
      workspace: {
        // The server gets the section mapped (client keys dropped, paths expanded), both
        // pushed on change and when it asks with workspace/configuration.
        didChangeConfiguration: async () => {
          await currentClient()?.sendNotification(DidChangeConfigurationNotification.type, { settings: { [SECTION]: currentSettings() } });
          repullDiagnostics();
        },
        configuration: (params, token, next) => {
          const mine = params.items.map((item) => item.section === SECTION);
          if (!mine.some((m) => m)) {
            return next(params, token);
          }
          return params.items.map((item): unknown => (item.section === SECTION ? currentSettings() : vscode.workspace.getConfiguration().get<unknown>(item.section ?? "") ?? null));
        },
      },
      executeCommand: async (command, args: unknown[], next): Promise<unknown> => {
        return (await (hooks.executeCommand(command, args) ?? next(command, args))) as unknown;
      },
    },
  };
}

async function startClient(hooks: ClientHooks, adopt: (c: LanguageClient) => void): Promise<void> {
  const server = await findServer(() => void restart());
  if ("missing" in server) {
    hooks.state(`no server: ${server.missing}`, false);
    return;
  }
  source = server.source;
  log(`[server] ${server.command} ${server.args.join(" ")} (from ${server.source})`);
  hooks.state(`starting, from ${server.source}`, true);
  const serverOptions: ServerOptions = {
    command: server.command,
    args: server.args,
    options: { cwd: vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? os.homedir(), env: pythonEnv() },
  };
  const policy = new RestartPolicy(config().get<number>("server.maxRestarts", 5));
  const client = new LanguageClient(SECTION, "mlir-lsp", serverOptions, clientOptions(hooks, policy));
  adopt(client);
  client.onNotification(COUNTED_NOTIFICATION, (p: DispatchResult & { uri?: string }) => hooks.counted(p));
  client.onDidChangeState((e) => {
    if (e.newState === State.Running) {
      hooks.state(`running, from ${server.source}`, true);
      hooks.running();
    } else if (e.newState === State.Stopped) {
      hooks.state("stopped", false);
    }
  });
  try {
    starting = client.start();
    await starting;
  } catch (e) {
    const msg = `mlir-lsp: the server (${server.command} ${server.args.join(" ")}, from ${server.source}) did not start: ${String(e)}`;
    log(msg);
    void vscode.window.showErrorMessage(msg, "Show Log").then((c) => c !== undefined && showLog());
  }
}

/** Made once, at activation; the session stops its client when the extension is disposed. */
export function createSession(hooks: ClientHooks): vscode.Disposable {
  session = new Session<LanguageClient>((adopt) => startClient(hooks, adopt), log);
  return { dispose: () => void session?.dispose() };
}

/** Stop the server (awaited) and start it again; restarts that overlap never make two. */
export function restart(): Promise<void> {
  return session?.restart() ?? Promise.resolve();
}

export function stopServer(): Promise<void> {
  return session?.dispose() ?? Promise.resolve();
}
