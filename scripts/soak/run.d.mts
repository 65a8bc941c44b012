// Types of scripts/soak/run.mjs for the e2e test that runs it (test/e2e/soak.test.ts).
export interface LeakyCycle {
  i: number;
  cycleSeed: number;
  plan: string;
  kind: string;
  found: Array<[string, string]>;
}

export interface SoakSummary {
  seed: number;
  lanes: number;
  cycles: number;
  faulted: number;
  faults: Record<string, number>;
  leaks: Record<string, number>;
  leakyCycles: LeakyCycle[];
  byFault: Record<string, number>;
  seconds: number;
  interrupted: string | undefined;
  /** Per lane: the name tag of its namespaces and bridges, and its temp root. */
  tags: string[];
  roots: string[];
}

export const PROBLEM_KINDS: string[];

export function runSoak(o: {
  cycles: number;
  seed: number;
  timeLimitS?: number;
  start?: number;
  lanes?: number;
  settleMs?: number;
  progress?: (s: SoakSummary) => void;
  signal?: AbortSignal;
}): Promise<SoakSummary>;

export function formatSummary(s: SoakSummary, o?: { firstLeaks?: number }): string;

export const LEAK_KINDS: string[];

export function accountingSelfCheck(): Promise<{
  kinds: string[];
  found: Array<[string, string]>;
  after: Array<[string, string]>;
}>;
