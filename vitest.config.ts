import { availableParallelism } from "node:os";
import { defineConfig } from "vitest/config";

// Three tiers: unit (pure, fakes), integration (the bundled binary with fixture delegates; a fake
// API server over real HTTP), e2e (root, real netns and plugins).
// Unit tests run on Node: delegates through FakeExec (test/fakes/fake-exec.ts), the container lock
// a no-op. What exists only in the Bun executable (the delegate runner, the lock, Bun's fetch) is
// run by Bun from test/unit/shipped/ where it can be, else by the integration tests against
// dist/plexus and the e2e tests: docs/development.md lists which tier covers which module.
// Unit and integration run together first; e2e runs alone after them (sequence.groupOrder), so a
// machine loaded by the other tiers never decides an end-to-end test.
export default defineConfig({
  test: {
    reporters: ["default"],
    // One worker per core (vitest's default leaves one core idle): unit and integration files
    // wait on processes and sockets as often as they compute, so on a 2-core machine one worker
    // ran the two tiers one after the other. The e2e tier stays one file at a time (below).
    maxWorkers: availableParallelism(),
    // A killed run's namespaces, links, mounts, temp dirs and processes are swept first.
    globalSetup: ["test/support/global-setup.ts"],
    projects: [
      {
        extends: true,
        test: {
          name: "unit",
          include: ["test/unit/**/*.test.ts"],
          // A deadline far above what a test takes on a loaded 2-core machine: a guard against a
          // hang, never a verdict on speed (the property tests run hundreds of cases each).
          testTimeout: 60_000,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: "integration",
          include: ["test/integration/**/*.test.ts"],
          testTimeout: 30_000,
          hookTimeout: 60_000,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: "e2e",
          include: ["test/e2e/**/*.test.ts"],
          sequence: { groupOrder: 1 },
          testTimeout: 60_000,
          hookTimeout: 60_000,
          // Real namespaces, bridges and host-local stores: one file at a time keeps names and
          // address ranges from colliding and failures readable.
          fileParallelism: false,
        },
      },
    ],
  },
});
