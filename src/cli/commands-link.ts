/**
 * In the CNI path's bundle only (esbuild.config.mjs puts it where src/cli/core.ts imports
 * ./commands and src/kubeapi/index.ts imports ./client-node-auth): the commands' bundle, required
 * by name from beside this bundle (the executable's embedded root, or dist/ under Node).
 *
 * The two bundles share no module, so a CniError thrown in the commands' bundle is of its own
 * CniError class: it is made again here, with its code, message and details, so that the CNI
 * path answers with that code and not as an internal failure.
 */
import { CniError, isCniError } from "../cni/errors";
import type * as Commands from "./commands-entry";

const COMMANDS_BUNDLE = "plexus-commands.cjs";

function commandsBundle(): typeof Commands {
  // Built at run time: no bundler may pull the commands back into this bundle.
  return require([__dirname, COMMANDS_BUNDLE].join("/")) as typeof Commands;
}

/** A CniError of the other bundle as one of this bundle; anything else as it is. */
function sameBundleError(err: unknown): unknown {
  if (isCniError(err) || !(err instanceof Error) || err.name !== "CniError") return err;
  const { code, details } = err as Error & { code: CniError["code"]; details?: string };
  return new CniError(code, err.message, details, { cause: err.cause });
}

export function runCommands(argv: readonly string[]): Promise<number> {
  return commandsBundle().runCommands(argv);
}

export async function pluginKubeSource(
  ...args: Parameters<typeof Commands.pluginKubeSource>
): ReturnType<typeof Commands.pluginKubeSource> {
  try {
    return await commandsBundle().pluginKubeSource(...args);
  } catch (err) {
    throw sameBundleError(err);
  }
}
