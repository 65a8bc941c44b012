/**
 * Per-test sandbox for the integration files: a fresh temp CNI_PATH/cniDir before each test and,
 * after it, a check that no fixture process (or grandchild) of that test is still running.
 */
import { afterEach, beforeAll, beforeEach, expect } from "vitest";
import { requirePlexusBinary, Sandbox } from "../support/plexus-bin";

export function useSandbox(): { readonly sb: Sandbox } {
  const holder: { sb: Sandbox } = { sb: undefined as unknown as Sandbox };
  beforeAll(() => requirePlexusBinary());
  beforeEach(() => {
    holder.sb = new Sandbox();
  });
  afterEach(async () => {
    const left = await holder.sb.dispose();
    expect(left, "processes of this test still running after it ended").toEqual([]);
  });
  return holder;
}
