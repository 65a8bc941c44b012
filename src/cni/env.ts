/** CNI_* environment parsing and validation (C2.1, B1–B10). */
import { parseCniArgs, type CniArgs } from "./args";
import { CniError, Code } from "./errors";
import { validateContainerId, validateInterfaceName } from "./validate";

export const COMMANDS = ["ADD", "DEL", "CHECK", "VERSION", "STATUS", "GC"] as const;
export type Command = (typeof COMMANDS)[number];

export interface CniRequest {
  command: Command;
  /** Empty for VERSION, STATUS and GC, which have no attachment. */
  containerId: string;
  /** May be "" on DEL (B5: containerd passes "" once the netns is closed). */
  netns: string;
  ifName: string;
  args: CniArgs;
  /** CNI_ARGS as given, passed to delegates unchanged (C4.1). */
  rawArgs: string;
  /** CNI_PATH split on ':', empty entries dropped. */
  path: string[];
}

type Env = Readonly<Record<string, string | undefined>>;

const REQUIRED: Record<Command, readonly string[]> = {
  ADD: ["CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME"],
  CHECK: ["CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME"],
  DEL: ["CNI_CONTAINERID", "CNI_IFNAME"],
  VERSION: [],
  STATUS: [],
  GC: ["CNI_PATH"],
};

export function parseCommand(raw: string | undefined): Command {
  if (raw === undefined || raw === "") {
    throw new CniError(
      Code.InvalidEnv,
      `CNI_COMMAND is not set; expected one of ${COMMANDS.join(", ")}`,
    );
  }
  if (!(COMMANDS as readonly string[]).includes(raw)) {
    throw new CniError(
      Code.InvalidEnv,
      `CNI_COMMAND ${JSON.stringify(raw.slice(0, 40))} is not a CNI command; expected one of ` +
        `${COMMANDS.join(", ")} (upper case)`,
    );
  }
  return raw as Command;
}

export function parseEnv(env: Env): CniRequest {
  const command = parseCommand(env.CNI_COMMAND);
  for (const key of REQUIRED[command]) {
    // DEL may have an empty CNI_NETNS, but CNI_IFNAME/CONTAINERID must be non-empty; CNI_PATH must
    // be set.
    if (env[key] === undefined || env[key] === "") {
      throw new CniError(Code.InvalidEnv, `${key} is required for ${command} but is not set`);
    }
  }
  const hasAttachment = command === "ADD" || command === "CHECK" || command === "DEL";
  const containerId = hasAttachment
    ? validateContainerId(env.CNI_CONTAINERID ?? "")
    : (env.CNI_CONTAINERID ?? "");
  const ifName = hasAttachment
    ? validateInterfaceName(env.CNI_IFNAME ?? "")
    : (env.CNI_IFNAME ?? "");
  const rawArgs = env.CNI_ARGS ?? "";
  return {
    command,
    containerId,
    netns: env.CNI_NETNS ?? "",
    ifName,
    args: parseCniArgs(rawArgs),
    rawArgs,
    path: (env.CNI_PATH ?? "").split(":").filter((p) => p !== ""),
  };
}
