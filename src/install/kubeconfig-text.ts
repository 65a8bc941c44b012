/**
 * The text of the node's kubeconfig for the plugin, apart from the file handling in kubeconfig.ts
 * so that the benchmarks write exactly what the installer writes (it imports nothing).
 */
export interface KubeconfigInput {
  server: string;
  /** The token and CA copies' paths on the node. */
  tokenFileHost: string;
  caFileHost: string;
}

/**
 * JSON, which kubectl and client-go read as they read YAML (JSON is YAML), and which every CNI
 * process parses without loading a YAML parser (src/kubeapi/kubeconfig.ts). The `plexus` extension
 * says who wrote it, where a YAML file would carry a comment.
 */
export function renderKubeconfig(input: KubeconfigInput): string {
  const kubeconfig = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      {
        name: "plexus",
        cluster: { server: input.server, "certificate-authority": input.caFileHost },
      },
    ],
    users: [{ name: "plexus", user: { tokenFile: input.tokenFileHost } }],
    contexts: [{ name: "plexus", context: { cluster: "plexus", user: "plexus" } }],
    "current-context": "plexus",
    extensions: [
      {
        name: "plexus",
        extension: {
          writtenBy: "plexus install: the Plexus CNI plugin's credentials on this node",
          note: "the token and CA files are refreshed by the installer; do not edit",
        },
      },
    ],
  };
  return `${JSON.stringify(kubeconfig, null, 2)}\n`;
}
