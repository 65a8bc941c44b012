/** Types of scripts/sbom.mjs for the test of the image SBOM. */
interface Component {
  "bom-ref": string;
  [key: string]: unknown;
}
export function imageSbom(o: {
  info: { version: string; commit: string; time: number; source?: string | undefined };
  arch: string;
  variant?: string;
  executable: { path: string; build: string; sha256: string; runtime: Component };
  libc: { version: string; files: Array<{ path: string; sha256: string }> };
  npm?: {
    $schema?: string;
    specVersion: string;
    metadata: { tools?: unknown; component: Component };
    components: Component[];
    dependencies: Array<{ ref: string; dependsOn?: string[] }>;
  };
  keep?: Set<string>;
}): string;
