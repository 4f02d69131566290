//! The Grafana dashboard (`docs/grafana/recruitd.json`) reads only what the server
//! exports: every metric its PromQL names is a sample name of a running server's
//! `/metrics` (after requests, so that the request histograms have series), by the
//! type the server declares it with (a counter's `_total`, a histogram's `_bucket`,
//! `_sum` and `_count`, a gauge's own name).

use crate::helpers::*;
use serde_json::Value;
use std::collections::BTreeSet;

const DASHBOARD: &str = include_str!("../../docs/grafana/recruitd.json");

/// PromQL's words that are no metric: keywords and modifiers.
const KEYWORDS: [&str; 13] = [
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "bool",
    "and",
    "or",
    "unless",
    "offset",
    "inf",
    "nan",
];

/// PromQL's aggregation operators, which may be followed by `by (…)` or `without (…)`
/// rather than by their parenthesis.
const AGGREGATIONS: [&str; 14] = [
    "sum",
    "min",
    "max",
    "avg",
    "group",
    "stddev",
    "stdvar",
    "count",
    "count_values",
    "bottomk",
    "topk",
    "quantile",
    "limitk",
    "limit_ratio",
];

/// The metric names a PromQL expression selects: identifiers that are not functions
/// (followed by `(`), keywords, label names (inside `{…}`, or the list after `by`,
/// `without`, `on`, `ignoring`, `group_left`, `group_right`) or inside strings and
/// ranges (`[…]`). `label_values(metric, label)` (a Grafana variable's query) names its
/// metric alone.
fn metrics_of(expr: &str) -> Vec<String> {
    let chars: Vec<char> = expr.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    // Set after a grouping keyword: the next parenthesised list holds labels.
    let mut labels_next = false;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '"' | '\'' | '`' => {
                i += 1;
                while i < chars.len() && chars[i] != c {
                    if chars[i] == '\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
            }
            '{' | '[' => {
                let close = if c == '{' { '}' } else { ']' };
                // Strings inside a matcher may hold a brace: skip them whole.
                i += 1;
                while i < chars.len() && chars[i] != close {
                    if chars[i] == '"' {
                        i += 1;
                        while i < chars.len() && chars[i] != '"' {
                            if chars[i] == '\\' {
                                i += 1;
                            }
                            i += 1;
                        }
                    }
                    i += 1;
                }
                i += 1;
            }
            '(' if labels_next => {
                labels_next = false;
                while i < chars.len() && chars[i] != ')' {
                    i += 1;
                }
                i += 1;
            }
            // A number or a duration (`0.99`, `5m`, `1e3`): no name.
            c if c.is_ascii_digit() => {
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                    i += 1;
                }
            }
            c if c.is_ascii_alphabetic() || c == '_' || c == ':' => {
                let start = i;
                while i < chars.len()
                    && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == ':')
                {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                let mut j = i;
                while j < chars.len() && chars[j].is_whitespace() {
                    j += 1;
                }
                let lower = word.to_ascii_lowercase();
                if matches!(
                    lower.as_str(),
                    "by" | "without" | "on" | "ignoring" | "group_left" | "group_right"
                ) {
                    labels_next = true;
                } else if word == "label_values" {
                    // Its first argument is the metric; the second a label name.
                    let args: String = chars[j + 1..].iter().take_while(|c| **c != ')').collect();
                    let metric = args.split(',').next().unwrap_or("").trim();
                    out.extend(metrics_of(metric));
                    i = j + 1 + args.len() + 1;
                } else if chars.get(j) == Some(&'(')
                    || KEYWORDS.contains(&lower.as_str())
                    || AGGREGATIONS.contains(&lower.as_str())
                {
                    // A function or an aggregation, or a keyword.
                } else {
                    out.push(word);
                }
            }
            // `$__rate_interval` and other variables sit in ranges or strings, already
            // skipped; any other `$` starts a variable name, skipped here.
            '$' => {
                i += 1;
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    out
}

/// Every PromQL expression of the dashboard: its panels' targets and its variables'
/// queries.
fn expressions(dashboard: &Value) -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                if let Some(Value::String(e)) = map.get("expr") {
                    out.push(e.clone());
                }
                if let Some(q) = map.get("query") {
                    match q {
                        Value::String(s) if s.contains('(') => out.push(s.clone()),
                        Value::Object(o) => {
                            if let Some(Value::String(s)) = o.get("query") {
                                out.push(s.clone());
                            }
                        }
                        _ => {}
                    }
                }
                for child in map.values() {
                    walk(child, out);
                }
            }
            Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(dashboard, &mut out);
    out
}

/// The sample names a text exposition exports: each declared metric by its type, and
/// every sample line's name.
fn exported(text: &str) -> (BTreeSet<String>, BTreeSet<String>) {
    let mut declared = BTreeSet::new();
    let mut sampled = BTreeSet::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut parts = rest.split_whitespace();
            let (Some(name), Some(kind)) = (parts.next(), parts.next()) else {
                continue;
            };
            let suffixes: &[&str] = match kind {
                "counter" => &["_total"],
                "histogram" => &["_bucket", "_sum", "_count"],
                _ => &[""],
            };
            for s in suffixes {
                declared.insert(format!("{name}{s}"));
            }
        } else if !line.starts_with('#') && !line.is_empty() {
            let end = line.find(['{', ' ']).unwrap_or(line.len());
            sampled.insert(line[..end].to_string());
        }
    }
    (declared, sampled)
}

#[test]
fn metric_names_are_read_out_of_promql() {
    assert_eq!(
        metrics_of(
            r#"histogram_quantile(0.99, sum by (le, route) (rate(recruitd_http_request_duration_seconds_bucket{route=~"/v1/{entity}",instance=~"$instance"}[$__rate_interval])))"#
        ),
        vec!["recruitd_http_request_duration_seconds_bucket"]
    );
    assert_eq!(
        metrics_of(
            "topk(10, max by (workspace) (deriv(a_b[5m]))) / on (x) group_left c_d offset 5m"
        ),
        vec!["a_b", "c_d"]
    );
    assert_eq!(
        metrics_of("label_values(recruitd_http_requests_total, instance)"),
        vec!["recruitd_http_requests_total"]
    );
    assert_eq!(
        metrics_of(r#"sum(x{a="}by(y)"}) and bool z"#),
        vec!["x", "z"]
    );
    assert_eq!(
        metrics_of("sum without (a) (x) > count by (b) (y)"),
        vec!["x", "y"]
    );
}

async fn the_dashboard_reads_only_metrics_the_server_exports(b: Backend) {
    let dashboard: Value = serde_json::from_str(DASHBOARD).expect("the dashboard is JSON");
    assert_eq!(dashboard["title"], "recruitd");
    // Every panel but a row queries the data source chosen by the variable.
    for panel in dashboard["panels"].as_array().unwrap() {
        if panel["type"] == "row" {
            continue;
        }
        assert_eq!(panel["datasource"]["uid"], "${datasource}", "{panel}");
        let targets = panel["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "{panel}");
        assert!(targets.iter().all(|t| t["expr"].is_string()), "{panel}");
    }
    let named: BTreeSet<String> = expressions(&dashboard)
        .iter()
        .flat_map(|e| metrics_of(e))
        .collect();
    assert!(named.len() >= 20, "the dashboard names {named:?}");

    let app = spawn_app(b).await;
    app.import_ok(&example()).await;
    app.lookups_and_a_miss(3).await;
    assert_eq!(app.post_company_note("for the dashboard").await.0, 201);
    let (declared, sampled) = exported(&app.metrics_text().await);
    let missing: Vec<&String> = named
        .iter()
        .filter(|n| !declared.contains(*n) && !sampled.contains(*n))
        .collect();
    assert!(
        missing.is_empty(),
        "the dashboard names metrics the server does not export: {missing:?}"
    );
    // The request histogram the latency panels read has series after the requests.
    for name in [
        "recruitd_http_request_duration_seconds_bucket",
        "recruitd_http_requests_total",
        "recruitd_store_commit_duration_seconds_bucket",
        "recruitd_workspace_records",
    ] {
        assert!(named.contains(name), "{name} is on the dashboard");
        assert!(sampled.contains(name), "{name} has samples");
    }
}

store_test!(the_dashboard_reads_only_metrics_the_server_exports);
