/**
 * C4.1 through dist/plexus: the runtime's trace context (`TRACEPARENT`, `TRACESTATE`, `BAGGAGE`,
 * which containerd and CRI-O set for a CNI call that is part of a trace) reaches every delegate,
 * every plugin of a conflist, on ADD, CHECK, STATUS and DEL alike, exactly as the runtime gave
 * it: a delegate that traces joins the runtime's trace.
 */
import { describe, expect, it } from "vitest";
import { useSandbox } from "./use-sandbox";

const ctx = useSandbox();

const TRACE = {
  TRACEPARENT: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
  TRACESTATE: "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7",
  BAGGAGE: "k8s.pod.name=web-0,k8s.namespace.name=app",
};

describe("C4.1 the runtime's trace context reaches every delegate", () => {
  it("C4.1 C2.8 TRACEPARENT, TRACESTATE and BAGGAGE on ADD, CHECK, STATUS and DEL, to every plugin", async () => {
    const { sb } = ctx;
    const chained = {
      cniVersion: "1.1.0",
      name: "net-b",
      plugins: [
        sb.delegate("net-b", { cniVersion: "1.1.0", type: "first" }),
        sb.delegate("net-b", { cniVersion: "1.1.0", type: "second" }),
      ],
    };
    const conf = sb.config([sb.delegate("net-a", { cniVersion: "1.1.0" }), chained], {
      cniVersion: "1.1.0",
    });
    for (const verb of ["ADD", "CHECK", "STATUS", "DEL"]) {
      const r = await sb.run(verb, conf, TRACE);
      expect(r.code, `${verb}: ${r.stdout}${r.stderr}`).toBe(0);
    }
    const calls = sb.invocations();
    expect(calls.map((c) => `${c.command} ${c.network} ${c.type}`)).toEqual([
      "ADD net-a noop",
      "ADD net-b first",
      "ADD net-b second",
      "CHECK net-a noop",
      "CHECK net-b first",
      "CHECK net-b second",
      "STATUS net-a noop",
      "STATUS net-b first",
      "STATUS net-b second",
      "DEL net-b second",
      "DEL net-b first",
      "DEL net-a noop",
    ]);
    for (const call of calls) {
      const seen = {
        TRACEPARENT: call.env.TRACEPARENT,
        TRACESTATE: call.env.TRACESTATE,
        BAGGAGE: call.env.BAGGAGE,
      };
      expect(seen, `${call.command} ${call.type}`).toEqual(TRACE);
    }
  });

  it("C4.1 without a trace context from the runtime, none is made up", async () => {
    const { sb } = ctx;
    const conf = sb.config([sb.delegate("net-a", { cniVersion: "1.1.0" })], {
      cniVersion: "1.1.0",
    });
    expect((await sb.run("ADD", conf)).code).toBe(0);
    expect((await sb.run("STATUS", conf)).code).toBe(0);
    expect((await sb.run("DEL", conf)).code).toBe(0);
    for (const call of sb.invocations())
      for (const key of Object.keys(TRACE)) expect(call.env, call.command).not.toHaveProperty(key);
  });
});
