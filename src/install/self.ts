/**
 * The file to copy into the CNI bin dir when `--bin-file` is not given: this process's own
 * executable, but only when it is the compiled Plexus (a Bun single executable, whose entry lives
 * in Bun's embedded file system, `/$bunfs/…`). Under Node or `bun run` the runtime is not Plexus,
 * so there is no default.
 */
export function ownExecutable(): string | undefined {
  const bun = (globalThis as { Bun?: { main?: string } }).Bun;
  return bun?.main?.startsWith("/$bunfs/") ? process.execPath : undefined;
}
