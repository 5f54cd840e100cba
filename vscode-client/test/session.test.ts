import { strict as assert } from "node:assert";
import { describe, it } from "node:test";
import { Session } from "../src/session";

/** Clients whose stop and start take a turn of the event loop, recording what ran when. */
class Clients {
  readonly events: string[] = [];
  live = new Set<number>();
  maxLive = 0;
  private n = 0;

  start = async (adopt: (c: { id: number; stop(): Promise<void> }) => void): Promise<void> => {
    const id = ++this.n;
    const stop = async (): Promise<void> => {
      await new Promise((r) => setTimeout(r, 5));
      this.live.delete(id);
      this.events.push(`stop ${id}`);
    };
    adopt({ id, stop });
    await new Promise((r) => setTimeout(r, 5));
    this.live.add(id);
    this.maxLive = Math.max(this.maxLive, this.live.size);
    this.events.push(`start ${id}`);
  };
}

describe("Session", () => {
  it("two restarts at once: each stop before the next start, one client at the end", async () => {
    const c = new Clients();
    const s = new Session(c.start, () => undefined);
    await s.restart();
    await Promise.all([s.restart(), s.restart(), s.restart()]);
    assert.deepEqual(c.events, ["start 1", "stop 1", "start 2"]); // the three at once are one restart
    assert.equal(c.live.size, 1);
    assert.equal(c.maxLive, 1);
    assert.equal(s.client?.id, 2);
  });
  it("a restart asked during one runs after it (with the settings of then)", async () => {
    const c = new Clients();
    const s = new Session(c.start, () => undefined);
    const first = s.restart();
    await new Promise((r) => setTimeout(r, 1));
    const second = s.restart();
    assert.notEqual(first, second);
    await second;
    assert.deepEqual(c.events, ["start 1", "stop 1", "start 2"]);
  });
  it("dispose stops the client and no restart starts another", async () => {
    const c = new Clients();
    const s = new Session(c.start, () => undefined);
    await s.restart();
    const pending = s.restart();
    await s.dispose();
    await pending;
    await s.restart();
    assert.equal(c.live.size, 0);
    assert.equal(s.client, undefined);
  });
  it("a stop that fails is logged and the next client still starts", async () => {
    const lines: string[] = [];
    let n = 0;
    const s = new Session<{ stop(): Promise<void> }>((adopt) => {
      n++;
      adopt({ stop: () => Promise.reject(new Error("already stopped")) });
      return Promise.resolve();
    }, (l) => lines.push(l));
    await s.restart();
    await s.restart();
    assert.equal(n, 2);
    assert.deepEqual(lines, ["[server] stop: Error: already stopped"]);
  });
});
