/**
 * The version a build bakes in (scripts/build-info.mjs), on throwaway git repositories: the tag's
 * version when a tag reaches the commit, else package.json's plus the commit; "dirty" for changed
 * tracked files only; a source tree without .git takes package.json's version and commit
 * "unknown", or what PLEXUS_BUILD_VERSION/PLEXUS_BUILD_COMMIT say; the image tag is a valid tag.
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { buildInfo, imageTag } from "../../../scripts/build-info.mjs";

const home = mkdtempSync(join(tmpdir(), "plx-build-info-"));
const GIT_ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: "t",
  GIT_AUTHOR_EMAIL: "t@example.test",
  GIT_COMMITTER_NAME: "t",
  GIT_COMMITTER_EMAIL: "t@example.test",
  GIT_AUTHOR_DATE: "2026-01-02T03:04:05Z",
  GIT_COMMITTER_DATE: "2026-01-02T03:04:05Z",
};
const git = (dir: string, ...args: string[]) =>
  execFileSync("git", args, { cwd: dir, env: GIT_ENV, encoding: "utf8" }).trim();

function repo(name: string): string {
  const dir = join(home, name);
  mkdirSync(dir);
  writeFileSync(join(dir, "package.json"), JSON.stringify({ version: "0.1.0" }));
  git(dir, "init", "-q");
  git(dir, "add", "package.json");
  git(dir, "commit", "-qm", "first");
  return dir;
}

const TAG_CHARS = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;
const noEnv = {};

describe("scripts/build-info.mjs", () => {
  afterAll(() => rmSync(home, { recursive: true, force: true }));

  it("no tag: package.json's version plus the commit, its time; dirty: tracked files", () => {
    const dir = repo("untagged");
    const commit = git(dir, "rev-parse", "HEAD");
    const info = buildInfo({ root: dir, env: noEnv });
    expect(info).toMatchObject({ version: `0.1.0+g${commit.slice(0, 12)}`, commit, dirty: false });
    expect(info.time).toBe(Date.parse("2026-01-02T03:04:05Z") / 1000);
    writeFileSync(join(dir, "untracked.txt"), "x");
    expect(buildInfo({ root: dir, env: noEnv }).dirty).toBe(false);
    writeFileSync(join(dir, "package.json"), JSON.stringify({ version: "0.1.0", x: 1 }));
    const dirty = buildInfo({ root: dir, env: noEnv });
    expect(dirty.version).toBe(`0.1.0+g${commit.slice(0, 12)}.dirty`);
    expect(imageTag(dirty)).toMatch(TAG_CHARS);
  });

  it("a tag: its version (no v); commits after it: git describe's count and commit", () => {
    const dir = repo("tagged");
    git(dir, "tag", "v0.2.0");
    const tagged = buildInfo({ root: dir, env: noEnv });
    expect(tagged.version).toBe("0.2.0");
    expect(imageTag(tagged)).toBe(`0.2.0-${tagged.commit.slice(0, 12)}`);
    writeFileSync(join(dir, "more"), "x");
    git(dir, "add", "more");
    git(dir, "commit", "-qm", "second");
    const after = buildInfo({ root: dir, env: noEnv });
    expect(after.version).toBe(`0.2.0-1-g${after.commit.slice(0, 12)}`);
    expect(imageTag(after)).toBe(after.version);
  });

  it("a tree without .git (a tarball), even inside another repository: commit unknown", () => {
    const outer = repo("outer");
    const tree = join(outer, "unpacked");
    mkdirSync(tree);
    writeFileSync(join(tree, "package.json"), JSON.stringify({ version: "0.3.0" }));
    const info = buildInfo({ root: tree, env: noEnv });
    expect(info).toMatchObject({ version: "0.3.0", commit: "unknown", time: 0 });
    expect(imageTag(info)).toBe("0.3.0-nogit");
    const env = { PLEXUS_BUILD_VERSION: "0.3.0+gabc", PLEXUS_BUILD_COMMIT: "a".repeat(40) };
    const named = buildInfo({ root: tree, env: { ...env, SOURCE_DATE_EPOCH: "42" } });
    expect(named).toMatchObject({ version: "0.3.0+gabc", commit: "a".repeat(40), time: 42 });
  });
});
