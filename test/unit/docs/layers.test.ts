/**
 * The layers are drawn once, in docs/development.md ("Layers"), and held by dependency-cruiser's
 * LAYERS table (.dependency-cruiser.cjs): the two must name the same folders in the same layers,
 * in the same order, and every folder of src/ must have its place.
 */
import { readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../../support/plexus-bin";

const { LAYERS } = createRequire(import.meta.url)(join(REPO_ROOT, ".dependency-cruiser.cjs")) as {
  LAYERS: string[][];
};

/**
 * The drawing's layers, bottom first: each numbered item is a layer, each of its bullets one
 * folder (`name/`) and what it holds.
 */
function drawnLayers(markdown: string): string[][] {
  const start = markdown.indexOf("\n## Layers\n");
  if (start < 0) throw new Error('docs/development.md has no "## Layers" section');
  const rest = markdown.slice(start + 1);
  const next = rest.slice(1).search(/\n#{1,3} /);
  const section = next < 0 ? rest : rest.slice(0, next + 1);
  const layers: string[][] = [];
  for (const line of section.split("\n")) {
    if (/^\d+\. /.test(line)) layers.push([]);
    const folder = /^\s+- `([a-z0-9-]+)\/`/.exec(line);
    if (folder) {
      if (layers.length === 0) throw new Error(`a folder before the first layer: ${line}`);
      layers.at(-1)!.push(folder[1]!);
    }
  }
  return layers;
}

describe("the layers: one drawing, one table", () => {
  const doc = readFileSync(join(REPO_ROOT, "docs/development.md"), "utf8");

  it("docs/development.md draws the layers of .dependency-cruiser.cjs, in order", () => {
    expect(LAYERS.length).toBeGreaterThan(5);
    expect(drawnLayers(doc)).toEqual(LAYERS);
  });

  it("every folder of src/ has its place in the table", () => {
    const folders = readdirSync(join(REPO_ROOT, "src"), { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
    expect(folders.filter((f) => !LAYERS.flat().includes(f))).toEqual([]);
  });

  it("a drawing that moves, drops or adds a folder is told apart", () => {
    const moved = doc
      .replace("   - `dra/`:", "   - `dra/`:")
      .replace(
        "8. The daemon's view of the cluster\n   - `watch/`",
        "8. The daemon's view of the cluster\n   - `dra/`: moved\n   - `watch/`",
      );
    expect(drawnLayers(moved)).not.toEqual(LAYERS);
    expect(drawnLayers(doc.replace("   - `kubelet/`:", "   - kubelet:"))).not.toEqual(LAYERS);
  });
});
