/**
 * What this build says about itself: the version and the commit, baked in by the build
 * (esbuild.config.mjs defines them from scripts/build-info.mjs). `plexus --version` prints them
 * and the daemon exposes them as `plexus_build_info`. Here, low in the layers, so that both the
 * command line and the daemon can name them.
 */
declare const PLEXUS_VERSION: string | undefined;
declare const PLEXUS_COMMIT: string | undefined;

/** The version from the git tag, or package.json's plus the commit ("0.0.0-dev" unbundled). */
export const VERSION = typeof PLEXUS_VERSION === "string" ? PLEXUS_VERSION : "0.0.0-dev";
/** The full commit id, or "unknown" for a build without git. */
export const COMMIT = typeof PLEXUS_COMMIT === "string" ? PLEXUS_COMMIT : "unknown";
