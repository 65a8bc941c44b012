/**
 * Run by Bun (exact-numbers.test.ts starts it): B92 on the runtime that ships. Each number
 * literal given is decoded as a NAD's config is (json.ts `exactNumbers`) and written back with
 * JSON.stringify; then one NAD's config goes the way of an ADD and its DEL: selection, the
 * delegate's stdin, the container record written and read back, the stdin again. Prints one JSON
 * line: the round-tripped documents, both stdin texts, and Plexus's own `3e1` as it read it.
 *
 * Input (argv[2], JSON): `literals`, a list of JSON number literals; `nadConfig`, a NAD's
 * spec.config; `dir`, an empty directory for the record store.
 */
import { decodeJson } from "../../../src/cni/json";
import { parsePlexusConf } from "../../../src/config/plugin-conf";
import { buildPluginConf } from "../../../src/libcni/conflist";
import { applySelection } from "../../../src/npwg/delegate-args";
import { resolveNadConfig } from "../../../src/npwg/nad";
import { RecordStore } from "../../../src/nodestate/record";

interface Ask {
  literals: string[];
  nadConfig: string;
  dir: string;
}

const ask = JSON.parse(process.argv[2] ?? "{}") as Ask;
const roundTrips = ask.literals.map((literal) =>
  JSON.stringify(decodeJson(`{"n":[${literal}]}`, { what: "literal", exactNumbers: true })),
);
const nad = { metadata: { namespace: "app", name: "exact" }, spec: { config: ask.nadConfig } };
const sel = { namespace: "app", name: "exact", cniArgs: { extra: 1 } };
const { conf } = applySelection(resolveNadConfig(nad, []).conf, sel);
const addStdin = JSON.stringify(buildPluginConf(conf, conf.plugins[0]!, {}));
const store = new RecordStore(ask.dir);
const record = {
  kind: "plexusRecordV1" as const,
  containerId: "ctr1",
  ifName: "eth0",
  netns: "/var/run/netns/x",
  cniVersion: "1.0.0",
  cniArgs: "",
  attachments: [{ network: "app/exact", ifName: "net1", isDefault: false, conf }],
};
await store.write(record);
const read = await store.read("ctr1", "eth0");
const back = read.state === "found" ? read.record.attachments[0]!.conf : undefined;
const delStdin = back ? JSON.stringify(buildPluginConf(back, back.plugins[0]!, {})) : read.state;
const own = parsePlexusConf(
  decodeJson('{"cniVersion":"1.0.0","name":"p","type":"plexus","delegateTimeoutSeconds":3e1}', {
    what: "stdin config",
    exactNumbers: true,
  }),
  { requireNetworks: false },
);
const answer = { roundTrips, addStdin, delStdin, delegateTimeoutMs: own.delegateTimeoutMs };
process.stdout.write(`${JSON.stringify(answer)}\n`);
