/**
 * The JavaScript runtime inside the executable (Bun; Node under development) reads variables of its
 * environment that change what it runs: `BUN_OPTIONS` (`--preload` a script, `--inspect` a
 * debugger), `NODE_OPTIONS`, `NODE_TLS_REJECT_UNAUTHORIZED`, JSC and Bun config knobs. A CNI plugin
 * runs as root with whatever environment its runtime has, so the executable runs
 * without them: when any is set, it replaces itself at once (execve, same pid, same stdin/stdout)
 * with the same command and an environment without them.
 *
 * Trust settings that many hosts set for every program (`SSL_CERT_FILE`, `SSL_CERT_DIR`,
 * `NODE_EXTRA_CA_CERTS`) are left alone: they cost no re-exec per pod, delegates may need them, and
 * they cannot widen what the CNI process trusts (the kubeconfig's CA is its only trust anchor, and
 * verification is explicit: src/kubeapi/http-transport.ts; tested with both set to another CA).
 *
 * Bun applies `BUN_OPTIONS` before any of Plexus's code runs: a `--preload` there has run once
 * already when this check sees it. What the re-exec guarantees is that the call itself (its
 * delegates, its API client, its lock) runs clean: no debugger port stays open, no foreign settings
 * apply. Keep such variables out of the container runtime's environment (docs/security.md).
 */
import { isStandaloneExecutable } from "../sys/runtime";

const TUNING =
  /^(BUN_OPTIONS|BUN_BE_BUN|BUN_INSPECT.*|BUN_CONFIG_.*|BUN_JSC_.*|BUN_RUNTIME_TRANSPILER_CACHE_PATH|NODE_OPTIONS|NODE_TLS_REJECT_UNAUTHORIZED|NODE_PATH|NODE_COMPILE_CACHE|NODE_DEBUG|NODE_DEBUG_NATIVE|NODE_V8_COVERAGE)$/;

/** The names of the runtime-tuning variables set in `env`. */
export function tuningVariables(env: Readonly<Record<string, string | undefined>>): string[] {
  return Object.keys(env).filter((k) => TUNING.test(k) && env[k] !== undefined);
}

export function withoutTuning(
  env: Readonly<Record<string, string | undefined>>,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && !TUNING.test(k)) out[k] = v;
  return out;
}

type Execve = (file: string, args: string[], env: Record<string, string>) => never;

/**
 * In the executable, with any runtime-tuning variable set: replaces the process with a clean one
 * (never returns). Elsewhere (Node running the bundle for development) it only drops them from
 * `process.env`, so that nothing later reads them and no delegate inherits them.
 */
export function reexecWithoutTuning(): void {
  if (tuningVariables(process.env).length === 0) return;
  const clean = withoutTuning(process.env);
  const execve = (process as unknown as { execve?: Execve }).execve;
  if (isStandaloneExecutable() && typeof execve === "function")
    execve(process.execPath, [process.execPath, ...process.argv.slice(2)], clean);
  for (const k of tuningVariables(process.env)) delete process.env[k];
}
