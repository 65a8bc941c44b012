/** Human-readable log lines for a terminal (install and daemon run by hand). */
import { describe, expect, it } from "vitest";
import { formatLogLine } from "../../../src/log/pretty";

describe("formatLogLine", () => {
  it("time, level, component, message, then the other fields as key=value", () => {
    const line = JSON.stringify({
      level: 40,
      time: "2026-11-23T14:01:02.345Z",
      pid: 7,
      component: "daemon",
      msg: "watch cache: list or watch failed; restarting",
      kind: "pods",
      retryInMs: 500,
      err: "socket hang up",
    });
    expect(formatLogLine(line)).toBe(
      '14:01:02.345 WARN  [daemon] watch cache: list or watch failed; restarting  kind=pods retryInMs=500 err="socket hang up"\n',
    );
  });
  it("a line that is not JSON passes through", () => {
    expect(formatLogLine("plain text")).toBe("plain text\n");
  });
});
