/**
 * Wakes the installer when something it depends on may have changed: fs.watch on the directories
 * (conf dir, readiness file's dir, the projected token's dir, the credentials dir), and a poll
 * timer as the fallback, since fs.watch misses events on some filesystems and a projected volume
 * updates by swapping a symlink. A burst of events becomes one wake-up after a short settle time,
 * so a writer that truncates then writes is seen once it is done.
 */
import { watch, type FSWatcher } from "node:fs";

export class ChangeNotifier {
  private readonly watchers: FSWatcher[] = [];
  private pending = false;
  private wake: (() => void) | undefined;

  constructor(
    dirs: readonly string[],
    private readonly pollMs: number,
    private readonly settleMs = Math.min(50, pollMs),
  ) {
    for (const dir of new Set(dirs)) {
      try {
        const w = watch(dir, { persistent: false }, () => this.poke());
        w.on("error", () => {
          // The directory went away: polling still covers it.
        });
        this.watchers.push(w);
      } catch {
        // Missing directory or no inotify: polling covers it.
      }
    }
  }

  private poke(): void {
    this.pending = true;
    this.wake?.();
  }

  /** Resolves after a change (plus the settle time), the poll interval, or an abort. */
  async next(signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    if (!this.pending) {
      await new Promise<void>((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          signal.removeEventListener("abort", done);
          this.wake = undefined;
          resolve();
        };
        const timer = setTimeout(done, this.pollMs);
        this.wake = done;
        signal.addEventListener("abort", done, { once: true });
      });
    }
    if (this.pending && !signal.aborted) await new Promise((r) => setTimeout(r, this.settleMs));
    this.pending = false;
  }

  close(): void {
    for (const w of this.watchers) w.close();
    this.watchers.length = 0;
  }
}
