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
      "14:01:02.345 WARN  [daemon] watch cache: list or watch failed; restarting  kind=pods " +
        'retryInMs=500 err="socket hang up"\n',
    );
  });
  it("a line that is not JSON passes through", () => {
    expect(formatLogLine("plain text")).toBe("plain text\n");
  });
  it("B98 a message, a field and a line that is not JSON show control and bidi characters escaped", () => {
    const evil = "br\u009b1A\u009b2K\u202eidge";
    const line = JSON.stringify({
      level: 50,
      time: "2026-11-23T14:01:02.345Z",
      component: "daemon",
      msg: `plugin ${evil} failed\u009d0;owned\u0007`,
      type: evil,
      err: "bad\nline \u2028 \u2066x\u2069",
    });
    const shown = formatLogLine(line);
    expect(shown).toBe(
      "14:01:02.345 ERROR [daemon] plugin br\\u009b1A\\u009b2K\\u202eidge failed\\u009d0;owned" +
        '\\u0007  type="br\\u009b1A\\u009b2K\\u202eidge" err="bad\\nline \\u2028 ' +
        '\\u2066x\\u2069"\n',
    );
    const raw = formatLogLine(`not json ${evil}\u001b[2J\n`);
    expect(raw).toBe("not json br\\u009b1A\\u009b2K\\u202eidge\\u001b[2J\n");
    for (const out of [shown, raw])
      expect(out.slice(0, -1)).not.toMatch(/[\p{Cc}\u2028\u2029\u202e\u2066-\u2069]/u);
  });
});
