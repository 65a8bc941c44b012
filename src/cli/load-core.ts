/**
 * Loads the core (everything but the CLI boundary) on first use, so VERSION never initialises it.
 * In the CNI path's bundle the core stays in the same file; esbuild evaluates it only on this
 * import (the commands are a bundle of their own, see esbuild.config.mjs).
 */
import type * as Core from "./core";

export async function loadCore(): Promise<typeof Core> {
  return import("./core");
}
