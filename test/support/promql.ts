/**
 * A minimal PromQL check for the alert rules and the dashboard under deploy/monitoring/, where
 * promtool is not available: brackets balance, every call is a PromQL function or aggregation,
 * and the metric names an expression selects are listed (to hold them against what the daemon
 * exposes). Not a parser: label matchers (`{…}`), ranges (`[…]`), string literals, and
 * `by`/`without`/`on`/`ignoring`/`group_left`/`group_right` with their label lists are dropped
 * first, so Grafana's `$node` and `$__rate_interval` inside them pass.
 */
/** Prometheus's functions (docs: querying/functions) and aggregation operators. */
const FUNCTIONS = new Set(
  (
    "abs absent absent_over_time acos acosh asin asinh atan atanh avg_over_time ceil changes " +
    "clamp clamp_max clamp_min cos cosh count_over_time day_of_month day_of_week day_of_year " +
    "days_in_month deg delta deriv exp floor histogram_avg histogram_count histogram_fraction " +
    "histogram_quantile histogram_stddev histogram_stdvar histogram_sum holt_winters hour idelta " +
    "increase irate label_join label_replace last_over_time ln log10 log2 mad_over_time " +
    "max_over_time min_over_time minute month pi predict_linear present_over_time " +
    "quantile_over_time rad rate resets round scalar sgn sin sinh sort sort_desc sort_by_label " +
    "sort_by_label_desc sqrt stddev_over_time stdvar_over_time sum_over_time tan tanh time " +
    "timestamp vector year " +
    "sum min max avg group stddev stdvar count count_values bottomk topk quantile limitk " +
    "limit_ratio"
  ).split(" "),
);
const KEYWORDS = new Set(["and", "or", "unless", "bool", "offset"]);
const LABEL_LISTS = /\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)/g;

export interface PromqlCheck {
  /** Metric names the expression selects. */
  metrics: string[];
  /** What is wrong with it (empty: fine as far as this check sees). */
  problems: string[];
}

/** Brackets of every kind, outside string literals, close in order. */
function unbalanced(expr: string): string | undefined {
  const pairs: Record<string, string> = { ")": "(", "]": "[", "}": "{" };
  const stack: string[] = [];
  for (const ch of expr) {
    if ("([{".includes(ch)) stack.push(ch);
    else if (ch in pairs && stack.pop() !== pairs[ch]) return `unbalanced ${ch}`;
  }
  return stack.length ? `unclosed ${stack.join("")}` : undefined;
}

export function checkPromql(expr: string): PromqlCheck {
  const problems: string[] = [];
  const noStrings = expr.replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""');
  const bad = unbalanced(noStrings);
  if (bad) return { metrics: [], problems: [`${bad} in ${expr}`] };
  const bare = noStrings
    .replace(/\{[^{}]*\}/g, " ")
    .replace(/\[[^[\]]*\]/g, " ")
    .replace(LABEL_LISTS, " ");
  const metrics: string[] = [];
  for (const m of bare.matchAll(/(?<![\w.$])[A-Za-z_:][\w:]*(?=(\s*\()?)/g)) {
    const name = m[0];
    if (m[1] !== undefined) {
      if (!FUNCTIONS.has(name)) problems.push(`unknown function ${name}( in ${expr}`);
    } else if (!KEYWORDS.has(name)) metrics.push(name);
  }
  if (/\S/.test(bare) && metrics.length === 0 && !/\bvector\s*\(|\btime\s*\(/.test(bare))
    problems.push(`selects no metric: ${expr}`);
  return { metrics, problems };
}

/** The exprs of `kubectl kustomize deploy/monitoring`: the rules', and the dashboard's panels'. */
export function monitoringExpressions(docs: ReadonlyArray<Record<string, any>>): string[] {
  const exprs: string[] = [];
  for (const doc of docs) {
    if (doc.kind === "PrometheusRule")
      for (const group of doc.spec.groups) for (const rule of group.rules) exprs.push(rule.expr);
    if (doc.kind === "ConfigMap")
      for (const text of Object.values(doc.data as Record<string, string>)) {
        const dashboard = JSON.parse(text);
        for (const panel of dashboard.panels ?? [])
          for (const target of panel.targets ?? []) exprs.push(target.expr);
      }
  }
  return exprs;
}

/** Grafana's `label_values(metric, label)` template queries of the dashboard, their metrics. */
export function templateMetrics(docs: ReadonlyArray<Record<string, any>>): string[] {
  const out: string[] = [];
  for (const doc of docs.filter((d) => d.kind === "ConfigMap"))
    for (const text of Object.values(doc.data as Record<string, string>))
      for (const v of JSON.parse(text).templating?.list ?? []) {
        const q = typeof v.query === "string" ? v.query : v.query?.query;
        const m = typeof q === "string" ? /^label_values\((\w+),\s*\w+\)$/.exec(q) : null;
        if (m) out.push(m[1]!);
      }
  return out;
}

/**
 * The metric names a /metrics text declares (`# TYPE` lines): a counter by its name, a histogram
 * or summary by the series it writes (`_bucket`, `_sum`, `_count`).
 */
export function declaredMetrics(text: string): Set<string> {
  const names = new Set<string>();
  for (const m of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [, name, type] = m as unknown as [string, string, string];
    names.add(name);
    if (type === "histogram") for (const s of ["_bucket", "_sum", "_count"]) names.add(name + s);
    if (type === "summary") for (const s of ["_sum", "_count"]) names.add(name + s);
  }
  return names;
}
