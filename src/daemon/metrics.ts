/**
 * Prometheus text exposition for the daemon: counters, a latency histogram per route, gauges read
 * at scrape time. Small on purpose (no client library: a dozen series).
 */
const BUCKETS_MS = [0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 1000];

export class Metrics {
  private readonly counters = new Map<string, number>();
  private readonly histograms = new Map<string, { buckets: number[]; sum: number; count: number }>();

  inc(name: string, labels: Record<string, string> = {}, by = 1): void {
    const key = series(name, labels);
    this.counters.set(key, (this.counters.get(key) ?? 0) + by);
  }

  observe(name: string, labels: Record<string, string>, ms: number): void {
    const key = `${name}\u0000${JSON.stringify(labels)}`;
    let h = this.histograms.get(key);
    if (!h) this.histograms.set(key, (h = { buckets: BUCKETS_MS.map(() => 0), sum: 0, count: 0 }));
    BUCKETS_MS.forEach((le, i) => {
      if (ms <= le) h.buckets[i]!++;
    });
    h.sum += ms / 1000;
    h.count++;
  }

  counter(name: string, labels: Record<string, string> = {}): number {
    return this.counters.get(series(name, labels)) ?? 0;
  }

  render(gauges: Record<string, number>): string {
    const lines: string[] = [];
    for (const [k, v] of [...this.counters].sort()) lines.push(`${k} ${v}`);
    for (const [key, h] of this.histograms) {
      const [name, labelJson] = key.split("\u0000") as [string, string];
      const labels = JSON.parse(labelJson) as Record<string, string>;
      BUCKETS_MS.forEach((le, i) => lines.push(`${series(`${name}_bucket`, { ...labels, le: String(le / 1000) })} ${h.buckets[i]}`));
      lines.push(`${series(`${name}_bucket`, { ...labels, le: "+Inf" })} ${h.count}`);
      lines.push(`${series(`${name}_sum`, labels)} ${h.sum}`);
      lines.push(`${series(`${name}_count`, labels)} ${h.count}`);
    }
    for (const [k, v] of Object.entries(gauges)) lines.push(`${k} ${v}`);
    return `${lines.join("\n")}\n`;
  }
}

function series(name: string, labels: Record<string, string>): string {
  const l = Object.entries(labels);
  if (l.length === 0) return name;
  return `${name}{${l.map(([k, v]) => `${k}="${v.replace(/["\\\n]/g, (c) => (c === "\n" ? "\\n" : `\\${c}`))}"`).join(",")}}`;
}
