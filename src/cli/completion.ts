/**
 * `plexus completion bash`: a bash completion script built from the command tree, so it never falls
 * behind the flags.
 */
import type { Command } from "commander";

function words(cmd: Command): string[] {
  return [
    ...cmd.commands.map((c) => c.name()),
    ...cmd.options.flatMap((o) => [o.short, o.long].filter((x): x is string => Boolean(x))),
    "--help",
  ];
}

/** Every command path (space-joined) and the words that may follow it. */
function table(cmd: Command, prefix: string[] = []): Array<[string, string[]]> {
  return [
    [prefix.join(" "), words(cmd)],
    ...cmd.commands.flatMap((c) => table(c, [...prefix, c.name()])),
  ];
}

export function completionScript(program: Command, shell: string): string | undefined {
  if (shell !== "bash") return undefined;
  const cases = table(program)
    .map(([path, w]) => `    "${path}") opts="${w.join(" ")}" ;;`)
    .join("\n");
  return `# bash completion for plexus; load it with: source <(plexus completion bash)
_plexus() {
  local cur path="" w i
  cur="\${COMP_WORDS[COMP_CWORD]}"
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="\${COMP_WORDS[i]}"
    [[ $w == -* ]] && continue
    case "\${path:+$path }$w" in
${table(program)
  .filter(([p]) => p !== "")
  .map(([p]) => `      "${p}") path="${p}" ;;`)
  .join("\n")}
    esac
  done
  local opts
  case "$path" in
${cases}
  esac
  COMPREPLY=($(compgen -W "$opts" -- "$cur"))
  # Nothing matches (an argument: a pod, a file): file names.
  [[ \${#COMPREPLY[@]} -eq 0 ]] && COMPREPLY=($(compgen -f -- "$cur"))
  return 0
}
complete -F _plexus plexus
`;
}
