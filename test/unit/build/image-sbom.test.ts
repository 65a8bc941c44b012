/**
 * The image's SBOM (scripts/sbom.mjs `imageSbom`), written from a made-up `npm sbom` answer so that
 * nothing runs: the one executable with Plexus's version and commit and the release build it is,
 * the Bun runtime it embeds, and Debian's libc6 by version with each glibc file by SHA-256; the
 * document is CycloneDX and one input gives one text.
 */
import { describe, expect, it } from "vitest";
import { imageSbom } from "../../../scripts/sbom.mjs";

const INFO = {
  version: "0.2.0",
  commit: "1a2b3c4d5e6f".padEnd(40, "0"),
  time: 1_780_000_000,
  source: "https://example.test/plexus",
};
const NPM = {
  $schema: "http://cyclonedx.org/schema/bom-1.5.schema.json",
  specVersion: "1.5",
  metadata: { tools: [{ name: "cli" }], component: { "bom-ref": "plexus-cni@0.1.0" } },
  components: [
    { "bom-ref": "pino@10.4.0", name: "pino", version: "10.4.0" },
    { "bom-ref": "vitest@4.1.12", name: "vitest", version: "4.1.12" },
  ],
  dependencies: [
    { ref: "plexus-cni@0.1.0", dependsOn: ["pino@10.4.0", "vitest@4.1.12"] },
    { ref: "pino@10.4.0", dependsOn: [] },
  ],
};
const RUNTIME = {
  "bom-ref": "@oven/bun-linux-x64-baseline@1.4.5",
  type: "application",
  name: "@oven/bun-linux-x64-baseline",
  version: "1.4.5",
};
const LIBC = {
  version: "2.36-9+deb12u14",
  files: [
    { path: "/lib/x86_64-linux-gnu/libc.so.6", sha256: "c".repeat(64) },
    { path: "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", sha256: "d".repeat(64) },
  ],
};

function sbom(variant = "baseline") {
  const executable = {
    path: "/usr/local/bin/plexus",
    build: "plexus-linux-amd64-baseline",
    sha256: "e".repeat(64),
    runtime: RUNTIME,
  };
  const o = { info: INFO, arch: "amd64", variant, executable, libc: LIBC };
  const text = imageSbom({ ...o, npm: NPM, keep: new Set(["pino@10.4.0"]) });
  return { text, doc: JSON.parse(text) };
}

type Component = {
  name: string;
  version?: string;
  purl?: string;
  hashes?: unknown;
  properties?: Array<{ name: string; value: string }>;
  components?: Component[];
  description?: string;
};
const byName = (doc: { components: Component[] }, name: string) =>
  doc.components.find((c) => c.name === name);

describe("the image SBOM (scripts/sbom.mjs)", () => {
  it("names the one executable by path and SHA-256, with Plexus's version, commit and build", () => {
    const { doc } = sbom();
    const exe = byName(doc, "/usr/local/bin/plexus")!;
    expect(exe).toMatchObject({
      type: "file",
      version: "0.2.0",
      description: "plexus-linux-amd64-baseline",
      hashes: [{ alg: "SHA-256", content: "e".repeat(64) }],
    });
    expect(exe.properties).toEqual([
      { name: "plexus:commit", value: INFO.commit },
      { name: "plexus:build", value: "plexus-linux-amd64-baseline" },
    ]);
    expect(doc.components.filter((c: Component) => c.name.startsWith("/usr/local/bin/"))).toEqual([
      exe,
    ]);
    expect(byName(doc, "@oven/bun-linux-x64-baseline")).toEqual(RUNTIME);
  });

  it("names Debian's libc6 by version and architecture, and each glibc file it gave by SHA-256", () => {
    const { doc } = sbom();
    const libc6 = byName(doc, "libc6")!;
    expect(libc6).toMatchObject({
      type: "library",
      version: "2.36-9+deb12u14",
      purl: "pkg:deb/debian/libc6@2.36-9%2Bdeb12u14?arch=amd64",
      licenses: [{ expression: "LGPL-2.1-or-later" }],
    });
    expect(libc6.components).toEqual(
      LIBC.files.map((f) => ({
        "bom-ref": `file:${f.path}`,
        type: "file",
        name: f.path,
        version: LIBC.version,
        hashes: [{ alg: "SHA-256", content: f.sha256 }],
      })),
    );
  });

  it("describes the image of its variant, which depends on the executable, its runtime and libc6", () => {
    const { doc } = sbom();
    expect(doc.bomFormat).toBe("CycloneDX");
    expect(doc.metadata.component).toMatchObject({
      type: "container",
      name: "plexus-image-linux-amd64-baseline",
      version: "0.2.0",
      properties: [{ name: "plexus:commit", value: INFO.commit }],
    });
    expect(doc.metadata.timestamp).toBe(
      `${new Date(INFO.time * 1000).toISOString().slice(0, 19)}Z`,
    );
    const top = doc.dependencies.find(
      (d: { ref: string }) => d.ref === "plexus-image-linux-amd64-baseline@0.2.0",
    );
    expect(top.dependsOn).toEqual([
      "pino@10.4.0",
      "file:/usr/local/bin/plexus",
      RUNTIME["bom-ref"],
      "pkg:deb/debian/libc6@2.36-9%2Bdeb12u14?arch=amd64",
    ]);
    // Only what the bundle holds: a dev dependency of the lock is not in the image.
    expect(byName(doc, "vitest")).toBeUndefined();
    expect(sbom("").doc.metadata.component.name).toBe("plexus-image-linux-amd64");
  });

  it("one input, one text: the serial number comes from the content", () => {
    expect(sbom().text).toBe(sbom().text);
    expect(sbom().doc.serialNumber).toMatch(/^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-/);
    expect(sbom("").doc.serialNumber).not.toBe(sbom().doc.serialNumber);
  });
});
