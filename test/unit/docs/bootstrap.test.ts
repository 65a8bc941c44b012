/**
 * scripts/bootstrap.sh installs, per command, only what that command needs, and
 * docs/development.md names every package it may install: the demo installs no container runtime,
 * emulator, kubectl or Go and never adds a foreign dpkg architecture; the test command says so
 * before it adds one.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../../support/plexus-bin";

const script = readFileSync(join(REPO_ROOT, "scripts/bootstrap.sh"), "utf8");
const development = readFileSync(join(REPO_ROOT, "docs/development.md"), "utf8");
const TEST_ONLY = 'if [ "$mode" = test ]; then';

/** The packages a part of the script adds to the apt-get list. */
const ADDED = /need_apt\+=\(([^)]+)\)/g;
const packages = (text: string) => [...text.matchAll(ADDED)].map((m) => m[1]!.trim());
const DEMO_PACKAGES = ["containernetworking-plugins", "iproute2", "iputils-ping", "npm"];
const read = (path: string) => readFileSync(join(REPO_ROOT, path), "utf8");

describe("scripts/bootstrap.sh", () => {
  const at = script.indexOf(TEST_ONLY);
  const end = script.indexOf("\nfi\n", at);
  const demoPart = script.slice(0, at) + script.slice(end);
  const testPart = script.slice(at, end);

  it("the demo's part installs only the demo's packages and touches no dpkg architecture", () => {
    expect(at).toBeGreaterThan(0);
    expect(packages(demoPart).sort()).toEqual(DEMO_PACKAGES);
    expect(demoPart).not.toMatch(/dpkg --add-architecture/);
  });

  it("the test command says what it is about to do before it adds the arm64 architecture", () => {
    const add = testPart.indexOf("dpkg --add-architecture arm64\n");
    const said = testPart.lastIndexOf("echo ", add);
    expect(add).toBeGreaterThan(0);
    expect(testPart.slice(said, add)).toMatch(/adding arm64 as a foreign dpkg architecture/);
  });

  it("docs/development.md names each package it installs; demo.sh, test.sh pick their part", () => {
    for (const pkg of packages(script)) expect(development, pkg).toContain(`\`${pkg}\``);
    expect(read("scripts/demo.sh")).toMatch(/^bash scripts\/bootstrap\.sh demo$/m);
    expect(read("scripts/test.sh")).toMatch(/^bash scripts\/bootstrap\.sh test$/m);
  });
});
