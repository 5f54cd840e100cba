// Restart on crash, with a limit: at most `max` restarts within `windowMs`.
export class RestartPolicy {
  private times: number[] = [];

  constructor(private readonly max: number, private readonly windowMs = 3 * 60 * 1000) {}

  /** Record a crash at `now`; true when the server should be started again. */
  shouldRestart(now: number): boolean {
    this.times = this.times.filter((t) => now - t < this.windowMs);
    if (this.times.length >= this.max) {
      return false;
    }
    this.times.push(now);
    return true;
  }

  reset(): void {
    this.times = [];
  }
}
