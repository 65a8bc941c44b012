/**
 * Layers that only point down, checked by `npm run lint:deps` (scripts/test.sh runs it before the
 * tests). A folder may import its own modules and those of lower layers; a folder of the same layer
 * only where no cycle results (no-circular). Bottom to top; docs/development.md draws the same
 * table (test/unit/docs/layers.test.ts holds the two together).
 */
const LAYERS = [
  ["sys", "cni", "log", "command"], // the system interface; the CNI protocol (pure); logging;
  //                                  the exit statuses of the commands
  ["invoke", "store", "netns"], //    running a plugin; state files; the pod's namespace
  ["libcni"], //                      conflists and the result cache (libcni's API)
  ["npwg", "config"], //              the NPWG spec's rules; Plexus's config
  ["gate"], //                        the delegate gate: what may run, vetted for each run
  ["cluster"], //                     the KubeApi port, the objects Plexus reads, the file cluster
  ["kubeapi", "kubelet", "dra"], //   the API server's client; kubelet's pod devices; DRA's rules
  ["watch"], //                       the daemon's watch caches (client-node informers, claims)
  ["nodestate"], //                   the node's state: records, pending index, lock, teardown
  ["planning", "migration"], //       a pod's plan (networks, devices); Multus's cache taken over
  ["orchestrate"], //                 the verbs
  ["daemon-client"], //               the CNI process's client of the daemon, the wire protocol
  ["daemon", "install"], //           the node daemon; the installer
  ["sources"], //                     which Kubernetes and which device source a call uses
  ["ops"], //                         the admin commands
  ["cli"], //                         the entry: argv, stdio, and the wiring (verb-deps.ts)
];

const upward = LAYERS.flatMap((layer, rank) => {
  const above = LAYERS.slice(rank + 1).flat();
  if (above.length === 0) return [];
  return [
    {
      name: `layer-${layer.join("-")}`,
      severity: "error",
      comment:
        `${layer.join(", ")} may not import ${above.join(", ")}: layers point down ` +
        "(docs/development.md#layers)",
      from: { path: `^src/(${layer.join("|")})/` },
      to: { path: `^src/(${above.join("|")})/` },
    },
  ];
});

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    ...upward,
    {
      name: "no-circular",
      severity: "error",
      comment: "a module may not (indirectly) import itself",
      from: { path: "^src/" },
      to: { circular: true },
    },
    {
      name: "src-not-test",
      severity: "error",
      comment: "production code does not import tests or their fakes",
      from: { path: "^src/" },
      to: { path: "^test/" },
    },
    {
      name: "kubelet-one-door",
      severity: "error",
      comment:
        "outside kubelet/, only kubelet/pod-devices.ts is imported: the wire stack stays behind it",
      from: { path: "^src/", pathNot: "^src/kubelet/" },
      to: { path: "^src/kubelet/", pathNot: "^src/kubelet/pod-devices[.]ts$" },
    },
    {
      name: "gate-only-vouches",
      severity: "error",
      comment:
        "only the delegate gate (src/gate/) vouches for a network list; libcni's runner checks it",
      from: { path: "^src/", pathNot: "^src/(gate/|libcni/conflist[.]ts$)" },
      to: { path: "^src/libcni/vouch[.]ts$" },
    },
    {
      name: "known-folder",
      severity: "error",
      comment: "every folder of src/ has its place in LAYERS (.dependency-cruiser.cjs)",
      from: { path: "^src/" },
      to: { path: "^src/", pathNot: `^src/(${LAYERS.flat().join("|")})/` },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { extensions: [".ts", ".js", ".mjs", ".json"] },
  },
};

// The table itself, for test/unit/docs/layers.test.ts: not enumerable, as dependency-cruiser
// refuses a configuration with keys it does not know.
Object.defineProperty(module.exports, "LAYERS", { value: LAYERS, enumerable: false });
