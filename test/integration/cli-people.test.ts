/**
 * The built binary as a person meets it: help and --version on stdout, errors on
 * stderr, no spec IDs in any help text, `plexus` alone prints the help (a runtime calling without
 * CNI_COMMAND still gets error 4), a bash completion script that bash accepts, and the commands
 * end to end on a node directory.
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  cniError,
  PLEXUS_BIN,
  requirePlexusBinary,
  runPlexus,
  TEST_PATH,
} from "../support/plexus-bin";

const env = { PATH: TEST_PATH };
const run = (args: string[], extra: Record<string, string> = {}) =>
  runPlexus({ env: { ...env, ...extra }, args });
const SPEC_ID = /\b[BCKMN]\d+(\.\d+)*\b/;
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe("people's output", () => {
  it("plexus with no arguments and no CNI_COMMAND prints the help on stdout and exits 0", async () => {
    const r = await run([]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain("Usage: plexus");
    for (const cmd of [
      "explain",
      "validate",
      "doctor",
      "records",
      "completion",
      "status",
      "install",
      "daemon",
    ])
      expect(r.stdout).toContain(cmd);
    expect(r.stderr).toBe("");
  });

  it("B1 without CNI_COMMAND but with the other CNI_* variables it is still a CNI call: error 4 on stdout", async () => {
    const r = await runPlexus({
      env: { ...env, CNI_CONTAINERID: "c1", CNI_PATH: "/opt/cni/bin" },
      stdin: "{}",
    });
    expect(cniError(r).code).toBe(4);
  });

  it("--help and --version go to stdout; every command's help is free of spec IDs", async () => {
    const v = await run(["--version"]);
    expect(v.code).toBe(0);
    // The version (from the git tag, or package.json's plus the commit), then the commit.
    expect(v.stdout.trim()).toMatch(/^\d+\.\d+\.\d+\S* \(commit ([0-9a-f]{40}|unknown)\)$/);
    const commands = [
      [],
      ["explain"],
      ["validate"],
      ["doctor"],
      ["records"],
      ["records", "rm"],
      ["install"],
      ["daemon"],
      ["completion"],
      ["status"],
    ];
    for (const c of commands) {
      const r = await run([...c, "--help"]);
      expect(r.code, c.join(" ")).toBe(0);
      expect(r.stdout, c.join(" ")).toContain("Usage: plexus");
      expect(r.stdout, c.join(" ")).not.toMatch(SPEC_ID);
      expect(r.stderr).toBe("");
    }
  });

  it("an unknown command or option is an error on stderr, nothing on stdout", async () => {
    const r = await run(["explian"]);
    expect(r.code).toBe(2);
    expect(r.stdout).toBe("");
    expect(r.stderr).toContain("unknown command");
    const typo = await run(["records", "lst"]);
    expect([typo.code, typo.stdout]).toEqual([2, ""]);
    expect(typo.stderr).toContain("unknown command 'lst'");
    const alone = await run(["records"]);
    expect([alone.code, alone.stderr]).toEqual([0, ""]);
    expect(alone.stdout).toContain("Usage: plexus records");
  });

  it("plexus completion bash prints a script bash accepts, completing commands and flags", async () => {
    const r = await run(["completion", "bash"]);
    expect(r.code).toBe(0);
    const dir = mkdtempSync(join(tmpdir(), "plx-completion-"));
    dirs.push(dir);
    const script = join(dir, "plexus.bash");
    writeFileSync(script, r.stdout);
    execFileSync("bash", ["-n", script]);
    const complete = (line: string) => {
      const words = line
        .split(" ")
        .map((w) => `"${w}"`)
        .join(" ");
      return execFileSync("bash", [
        "-c",
        `source ${script}; COMP_WORDS=(${words}); COMP_CWORD=$((\${#COMP_WORDS[@]}-1)); _plexus; ` +
          `echo "\${COMPREPLY[@]}"`,
      ])
        .toString()
        .trim()
        .split(" ");
    };
    expect(complete("plexus ex")).toEqual(["explain"]);
    expect(complete("plexus records ")).toEqual(expect.arrayContaining(["list", "show", "rm"]));
    expect(complete("plexus records rm x --te")).toEqual(["--teardown"]);
    expect((await run(["completion", "fish"])).code).toBe(2);
  });
});

describe("logs for a terminal", () => {
  it("plexus install logs readable lines when stderr is a terminal (script(1) gives it one), JSON lines otherwise", async () => {
    requirePlexusBinary();
    const dir = mkdtempSync(join(tmpdir(), "plx-tty-"));
    dirs.push(dir);
    const args = [
      "install",
      "--once",
      "--host-prefix",
      "",
      "--cni-conf-dir",
      dir,
      "--cni-bin-dir",
      dir,
      "--skip-binary-copy",
      "--primary-config-timeout",
      "0.2",
      "--api-server",
      "https://127.0.0.1:1",
      "--without-kubernetes",
    ];
    const quoted = [PLEXUS_BIN, ...args].map((a) => `'${a}'`).join(" ");
    let tty = "";
    try {
      tty = execFileSync("script", ["-qec", quoted, "/dev/null"], {
        env: { ...process.env, PATH: TEST_PATH },
      }).toString();
    } catch (err) {
      tty = String((err as { stdout?: Buffer }).stdout ?? "");
    }
    expect(tty).toMatch(
      /^\d\d:\d\d:\d\d\.\d{3} INFO {2}\[install\] waiting for the primary network {2}reason="no usable primary network config/m,
    );
    const piped = await run(args);
    const lines = piped.stderr.split("\n").filter(Boolean);
    expect(JSON.parse(lines.find((l) => l.includes("waiting for the primary"))!)).toMatchObject({
      level: 30,
      component: "install",
      msg: "waiting for the primary network",
    });
  });
});

/**
 * A node directory under `dir`: Plexus's conflist (a file cluster) and the default network in
 * net.d, and a cluster whose pod app/web selects a NAD of a plugin that is not installed.
 * Returns the conf dir.
 */
function writeNodeDir(dir: string): string {
  const confDir = join(dir, "net.d");
  const cluster = join(dir, "cluster");
  execFileSync("mkdir", ["-p", confDir, cluster]);
  writeFileSync(
    join(confDir, "00-plexus.conflist"),
    JSON.stringify({
      cniVersion: "1.0.0",
      name: "plexus",
      plugins: [
        {
          type: "plexus",
          clusterNetwork: "cbr0",
          confDir,
          fileClusterDir: cluster,
          cniDir: join(dir, "state"),
        },
      ],
    }),
  );
  writeFileSync(
    join(confDir, "10-cbr0.conflist"),
    JSON.stringify({
      cniVersion: "1.0.0",
      name: "cbr0",
      plugins: [{ type: "bridge", ipam: { type: "host-local", subnet: "10.77.0.0/24" } }],
    }),
  );
  const gone = {
    apiVersion: "k8s.cni.cncf.io/v1",
    kind: "NetworkAttachmentDefinition",
    metadata: { namespace: "app", name: "gone" },
    spec: { config: JSON.stringify({ cniVersion: "1.0.0", type: "no-such-plugin" }) },
  };
  const web = {
    apiVersion: "v1",
    kind: "Pod",
    metadata: {
      namespace: "app",
      name: "web",
      annotations: { "k8s.v1.cni.cncf.io/networks": "gone" },
    },
  };
  const yaml = [gone, web].map((o) => `---\n${JSON.stringify(o)}\n`).join("");
  writeFileSync(join(cluster, "objects.yaml"), yaml);
  return confDir;
}

describe("the commands through the binary", () => {
  it("explain, validate and doctor on a node directory: text on stdout, exit 1 when ADD would fail", async () => {
    const dir = mkdtempSync(join(tmpdir(), "plx-people-"));
    dirs.push(dir);
    const confDir = writeNodeDir(dir);
    const flags = ["--cni-conf-dir", confDir, "--cni-path", "/usr/lib/cni"];
    const explain = await run(["explain", "app/web", ...flags]);
    expect(explain.code).toBe(1);
    expect(explain.stdout).toContain("eth0  default network cbr0");
    expect(explain.stdout).toContain('plugin type="no-such-plugin" is missing');
    const json = await run(["explain", "app/web", ...flags, "-o", "json"]);
    expect(JSON.parse(json.stdout)).toMatchObject({
      pod: "app/web",
      attachments: [{ ifName: "eth0" }, { ifName: "net1", plugins: [{ type: "no-such-plugin" }] }],
    });
    const validate = await run(["validate", "app/gone", ...flags]);
    expect(validate.code).toBe(1);
    expect(validate.stdout).toMatch(/^app\/gone: error$/m);
    const doctor = await run(["doctor", ...flags]);
    expect(doctor.stdout).toMatch(/^ok\s+runtime config/m);
    expect(doctor.stderr).toBe("");
  });
});
