/**
 * The seed and run count of a property-based test. CI runs each property with its fixed seed and
 * bounded count; a longer run scales every count and may change the seed for all of them:
 * `PLEXUS_PROPERTY_SCALE=20 PLEXUS_PROPERTY_SEED=7 npx vitest run …` (docs/security.md gives the
 * figures of the last such run).
 */
export function propertyRuns({ seed, numRuns }: { seed: number; numRuns: number }): {
  seed: number;
  numRuns: number;
} {
  const scale = Number(process.env.PLEXUS_PROPERTY_SCALE ?? "1");
  const envSeed = process.env.PLEXUS_PROPERTY_SEED;
  return {
    seed: envSeed === undefined ? seed : Number(envSeed),
    numRuns: Math.max(1, Math.round(numRuns * (Number.isFinite(scale) && scale > 0 ? scale : 1))),
  };
}
