// The one language client of the extension, started and stopped one step at a time. Pure (no
// vscode import) so node's test runner covers it.
//
// A restart stops the running client (awaited: its server is gone, its diagnostics cleared)
// before the next one starts. A restart asked while one is under way waits for it; restarts
// asked meanwhile make one more (it reads the settings as they are then), never two servers.

export interface Stoppable {
  stop(): Promise<void>;
}

/** Starts a client; calls `adopt` with it as soon as it exists (before it is running), so the
 * rest of the extension sees the client whose start it waits for. */
export type Starter<C> = (adopt: (client: C) => void) => Promise<void>;

export class Session<C extends Stoppable> {
  private current: C | undefined;
  private chain: Promise<void> = Promise.resolve();
  private queued: Promise<void> | undefined;
  private disposed = false;

  constructor(private readonly start: Starter<C>, private readonly log: (line: string) => void) {}

  /** The client of the last start (undefined while none, or between a stop and the next start). */
  get client(): C | undefined {
    return this.current;
  }

  /** Stop the running client, then start one; see the file's comment. */
  restart(): Promise<void> {
    if (this.queued !== undefined) {
      return this.queued;
    }
    const next = this.chain.then(async () => {
      this.queued = undefined;
      await this.stopCurrent();
      if (!this.disposed) {
        await this.start((c) => {
          this.current = c;
        });
      }
    });
    this.queued = next;
    this.chain = next.catch((e: unknown) => this.log(`[server] restart: ${String(e)}`));
    return next;
  }

  /** Stop the client for good (deactivation): after the steps under way, none starts again. */
  dispose(): Promise<void> {
    this.disposed = true;
    this.chain = this.chain.then(() => this.stopCurrent());
    return this.chain;
  }

  private async stopCurrent(): Promise<void> {
    const old = this.current;
    if (old === undefined) {
      return;
    }
    try {
      await old.stop();
    } catch (e) {
      this.log(`[server] stop: ${String(e)}`);
    }
    if (this.current === old) {
      this.current = undefined;
    }
  }
}
