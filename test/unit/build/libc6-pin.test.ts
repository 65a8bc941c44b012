/**
 * The images' glibc pin (scripts/libc6.mjs): the version found must be the one the pin file names,
 * or the build fails naming both, unless told to move the pin; a libc6 package file is read for
 * its own package, architecture and version (a package made here with dpkg-deb, nothing fetched)
 * and its libraries are found inside it, symlinks followed without leaving it.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { checkLibc6Pin, packagedLibc6, readLibc6Pin } from "../../../scripts/libc6.mjs";
import { REPO_ROOT } from "../../support/plexus-bin";

const home = mkdtempSync(join(tmpdir(), "plx-libc6-pin-"));

function pinFile(name: string, content: string): string {
  const file = join(home, name);
  writeFileSync(file, content);
  return file;
}

/** A package file named libc6 (or `pkg`) for `arch` at `version`, holding a fake libc. */
function fakeDeb(o: { pkg?: string; arch: string; version: string }): string {
  const dir = mkdtempSync(join(home, "deb-"));
  const triplet = o.arch === "arm64" ? "aarch64-linux-gnu" : "x86_64-linux-gnu";
  mkdirSync(join(dir, "DEBIAN"));
  mkdirSync(join(dir, "lib", triplet), { recursive: true });
  writeFileSync(join(dir, "lib", triplet, "libc.so.6"), "the C library\n");
  // An absolute link (libc6 ships some): it must resolve inside the package, not on this machine.
  symlinkSync(`/lib/${triplet}/libc.so.6`, join(dir, "lib", triplet, "libm.so.6"));
  mkdirSync(join(dir, "usr/share/doc/libc6"), { recursive: true });
  writeFileSync(join(dir, "usr/share/doc/libc6/copyright"), "copyright\n");
  writeFileSync(
    join(dir, "DEBIAN/control"),
    [
      `Package: ${o.pkg ?? "libc6"}`,
      `Version: ${o.version}`,
      `Architecture: ${o.arch}`,
      "Maintainer: nobody <nobody@example.test>",
      "Description: a stand-in for the test",
      "",
    ].join("\n"),
  );
  const deb = `${dir}.deb`;
  execFileSync("dpkg-deb", ["--root-owner-group", "-b", dir, deb], { stdio: "ignore" });
  return deb;
}

describe("the images' libc6 pin (scripts/libc6.mjs)", () => {
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  it("the repository pins one Debian version", () => {
    const pinned = readLibc6Pin();
    expect(pinned).toMatch(/^\d[\w.+~-]*$/);
    expect(readFileSync(join(REPO_ROOT, "scripts/libc6.version"), "utf8")).toBe(`${pinned}\n`);
  });

  it("the pinned version passes; another fails naming both and leaves the pin", () => {
    const file = pinFile("pin-a", "2.36-9+deb12u14\n");
    expect(checkLibc6Pin({ found: "2.36-9+deb12u14", arch: "arm64", file })).toBe(
      "2.36-9+deb12u14",
    );
    expect(() => checkLibc6Pin({ found: "2.36-9+deb12u13", arch: "arm64", file })).toThrow(
      /libc6:arm64 here is 2\.36-9\+deb12u13, but .*pin-a pins 2\.36-9\+deb12u14.*PLEXUS_LIBC6_UPDATE=1/,
    );
    expect(readFileSync(file, "utf8")).toBe("2.36-9+deb12u14\n");
  });

  it("told to update, the pin moves to the version found", () => {
    const file = pinFile("pin-b", "2.36-9+deb12u13\n");
    expect(checkLibc6Pin({ found: "2.36-9+deb12u14", arch: "amd64", file, update: true })).toBe(
      "2.36-9+deb12u14",
    );
    expect(readLibc6Pin(file)).toBe("2.36-9+deb12u14");
  });

  it("a pin file that is not one Debian version is refused", () => {
    for (const bad of ["", "2.36 2.37\n", "latest\n", "2.36-9;rm\n"])
      expect(() => readLibc6Pin(pinFile("pin-bad", bad)), bad).toThrow(/expected one Debian/);
  });

  it("a package file: its version, its libraries inside it, symlinks kept inside", () => {
    const deb = fakeDeb({ arch: "arm64", version: "2.36-9+deb12u14" });
    const scratch = mkdtempSync(join(home, "unpacked-"));
    const libc6 = packagedLibc6({ arch: "arm64", triplet: "aarch64-linux-gnu", deb, scratch });
    expect(libc6.version).toBe("2.36-9+deb12u14");
    const libc = join(scratch, "lib/aarch64-linux-gnu/libc.so.6");
    expect(libc6.find("libc.so.6")).toBe(libc);
    expect(libc6.find("libm.so.6")).toBe(libc);
    expect(libc6.copyright).toBe(join(scratch, "usr/share/doc/libc6/copyright"));
    expect(() => libc6.find("libstdc++.so.6")).toThrow(/libstdc\+\+\.so\.6 .* is not in/);
  });

  it("a package file of another package or architecture is refused", () => {
    const scratch = mkdtempSync(join(home, "unpacked-"));
    const other = { triplet: "x86_64-linux-gnu", scratch };
    const arm = fakeDeb({ arch: "arm64", version: "2.36-9+deb12u14" });
    expect(() => packagedLibc6({ ...other, arch: "amd64", deb: arm })).toThrow(
      /is libc6:arm64, expected libc6:amd64/,
    );
    const musl = fakeDeb({ pkg: "musl", arch: "amd64", version: "1.2.3-1" });
    expect(() => packagedLibc6({ ...other, arch: "amd64", deb: musl })).toThrow(
      /is musl:amd64, expected libc6:amd64/,
    );
  });
});
