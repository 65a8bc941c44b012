// The pinned Bun (the devDependency "bun") that npm ci installed. Its postinstall links the
// platform package's binary to node_modules/.bin/bun; where install scripts did not run (npm's
// allowScripts, --ignore-scripts) that is a placeholder, and the platform package's own binary
// (@oven/bun-<os>-<arch>, an optional dependency that npm installs without scripts) is used.
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("..", import.meta.url));

export function bunPath() {
  const want = JSON.parse(readFileSync(`${root}package.json`, "utf8")).devDependencies.bun;
  const arch = process.arch === "arm64" ? "aarch64" : process.arch;
  const candidates = [
    `${root}node_modules/.bin/bun`,
    `${root}node_modules/@oven/bun-${process.platform}-${arch}/bin/bun`,
  ];
  const tried = [];
  for (const path of candidates) {
    if (!existsSync(path)) continue;
    try {
      const got = execFileSync(path, ["--version"], {
        encoding: "utf8",
        stdio: ["ignore", "pipe", "ignore"],
      }).trim();
      if (got === want) return path;
      tried.push(`${path} is Bun ${got}`);
    } catch {
      tried.push(`${path} does not run`);
    }
  }
  throw new Error(
    `no Bun ${want} in node_modules (${tried.join("; ") || "none installed"}): run npm ci`,
  );
}
