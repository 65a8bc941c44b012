// (a) VERSION through dist/plexus (the Bun executable) against `node -e 0` on the pinned Node.
import { NODE, timed, median, max, fmt, relMiB, table, RUNTIME_ENV } from "./lib.mjs";

export async function benchVersion(runs) {
  const env = { ...RUNTIME_ENV, CNI_COMMAND: "VERSION" };
  const cases = [
    ["node -e 0 (floor)", NODE, ["-e", "0"]],
    ["dist/plexus VERSION", "dist/plexus", []],
  ];
  const res = cases.map(() => ({ ms: [], rss: [] }));
  for (let i = 0; i < runs + 2; i++) {
    for (const [j, [, cmd, args]] of cases.entries()) {
      const r = await timed(cmd, args, { env });
      if (r.code !== 0) throw new Error(`${cmd} failed: ${r.stdout}${r.stderr}`);
      if (i < 2) continue; // warm the page cache
      res[j].ms.push(r.ms);
      if (r.rssKiB) res[j].rss.push(r.rssKiB);
    }
  }
  const floor = median(res[0].ms);
  console.log("== VERSION start-up (target: dist/plexus ≤ 12 ms)");
  table(
    ["case", "median ms", "× node -e 0", "peak RSS MiB (× node -e 0)"],
    cases.map(([name], j) => [
      name,
      fmt(median(res[j].ms)),
      (median(res[j].ms) / floor).toFixed(2),
      relMiB(max(res[j].rss) / 1024),
    ]),
  );
  console.log("");
  return { floor, version: median(res[1].ms), versionRssMiB: max(res[1].rss) / 1024 };
}
