/** Types of scripts/build-info.mjs for the tests that read a build's identity. */
export interface BuildInfo {
  version: string;
  commit: string;
  time: number;
  dirty: boolean;
  source: string | undefined;
}
export interface BuildInfoOptions {
  root?: string;
  env?: Record<string, string | undefined>;
}
export function buildInfo(o?: BuildInfoOptions): BuildInfo;
export function imageTag(info: { version: string; commit: string }): string;
