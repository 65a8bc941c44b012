/**
 * The entry of the commands' bundle (esbuild.config.mjs): what a CNI call never runs, a file of its
 * own in the executable. The CNI path's bundle reaches it only through commands-link.ts.
 */
export { pluginKubeSource } from "../kubeapi/client-node-auth";
export { runCommands } from "./commands";
