/**
 * Loads the core bundle (everything but the CLI boundary) through {@link loadBundle}, so VERSION
 * never pays for it. Under vitest (no bundle) the TypeScript module is imported directly.
 */
import { loadBundle } from "./bundle-loader";
import type * as Core from "./core";

declare const PLEXUS_BUNDLED: boolean | undefined;

export async function loadCore(): Promise<typeof Core> {
  if (typeof PLEXUS_BUNDLED === "undefined" || !PLEXUS_BUNDLED) return import("./core");
  return loadBundle<typeof Core>("plexus-core");
}
