//! Charts (SVG, so no fonts or system libraries are needed): latency by percentile for
//! every run and endpoint of a report, on the usual "nines" axis (50%, 90%, 99%,
//! 99.9%, …) and a logarithmic latency axis, so runs can be laid side by side; and, for
//! runs long enough to have one, p99 second by second.

use crate::report::{decode_histogram, Report};
use anyhow::anyhow;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

/// The most lines on one chart (the busiest endpoints of each run are drawn).
const MAX_LINES: usize = 12;

fn nines(q: f64) -> f64 {
    -(1.0 - q).max(1e-6).log10()
}

fn nines_label(x: &f64) -> String {
    match x.round() as i64 {
        0 => "0%".into(),
        1 => "90%".into(),
        2 => "99%".into(),
        3 => "99.9%".into(),
        4 => "99.99%".into(),
        5 => "99.999%".into(),
        6 => "99.9999%".into(),
        _ => String::new(),
    }
}

/// Writes `<out>/<name>.svg` (percentiles) and, when a run has a timeline of at least
/// ten seconds, `<out>/<name>-timeline.svg`; returns the paths written.
pub fn write(report: &Report, out: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut series: Vec<(String, Vec<(f64, f64)>)> = Vec::new();
    // The percentile axis goes as far as the samples resolve (1,000 samples: 99.9%).
    let most = report
        .runs
        .iter()
        .flat_map(|r| r.endpoints.iter().map(|e| e.ok + e.mismatches))
        .max()
        .unwrap_or(1);
    let xmax = (most.max(100) as f64).log10().ceil().min(6.0);
    for r in &report.runs {
        let mut eps: Vec<_> = r
            .endpoints
            .iter()
            .filter(|e| e.ok + e.mismatches > 0)
            .collect();
        eps.sort_by_key(|e| std::cmp::Reverse(e.requests));
        let per_run = (MAX_LINES / report.runs.len().max(1)).max(1);
        for e in eps.into_iter().take(per_run) {
            let h = decode_histogram(&e.histogram)?;
            if h.is_empty() {
                continue;
            }
            let mut pts: Vec<(f64, f64)> = h
                .iter_quantiles(2)
                .map(|v| {
                    (
                        nines(v.quantile_iterated_to()),
                        v.value_iterated_to() as f64 / 1e3,
                    )
                })
                .filter(|(x, _)| x.is_finite())
                .map(|(x, y)| (x.min(xmax), y))
                .collect();
            pts.dedup_by(|a, b| (a.0 - b.0).abs() < 1e-4);
            series.push((format!("{} {}: {}", r.system, r.workload, e.name), pts));
        }
    }
    let mut written = Vec::new();
    if series.is_empty() {
        return Ok(written);
    }
    std::fs::create_dir_all(out)?;
    let path = out.join(format!("{}.svg", report.name));
    {
        let ys = series.iter().flat_map(|s| s.1.iter().map(|p| p.1));
        // The scale starts at the lowest first-percentile value: a few instant answers
        // (the baseline answers too-short numbers without a query) must not squash it.
        let ymin = series
            .iter()
            .filter_map(|s| s.1.iter().find(|p| p.0 >= nines(0.01)).map(|p| p.1))
            .fold(f64::INFINITY, f64::min)
            .max(0.001)
            * 0.8;
        let ymax = ys.fold(0.0, f64::max).max(ymin * 10.0) * 1.25;
        draw_lines(
            &path,
            &Axes {
                caption: format!("{}: latency by percentile", report.name),
                size: (1100, 650),
                x: 0f64..xmax,
                y: ymin..ymax,
                x_desc: "percentile",
                y_desc: "latency (ms)",
                x_labels: Some((xmax as usize + 1, nines_label)),
                legend: SeriesLabelPosition::UpperLeft,
            },
            &series,
        )?;
    }
    written.push(path);
    let timelines: Vec<_> = report
        .runs
        .iter()
        .filter(|r| r.timeline.len() >= 10)
        .collect();
    if !timelines.is_empty() {
        let path = out.join(format!("{}-timeline.svg", report.name));
        let tmax = timelines
            .iter()
            .flat_map(|r| r.timeline.iter().map(|t| t.t))
            .fold(1.0, f64::max);
        // Logarithmic, so a flat sub-millisecond line stays readable next to spikes.
        let p99s = timelines
            .iter()
            .flat_map(|r| r.timeline.iter().map(|t| t.p99_us as f64 / 1e3));
        let ymax = p99s.clone().fold(0.01, f64::max) * 1.5;
        let ymin = p99s
            .filter(|v| *v > 0.0)
            .fold(f64::INFINITY, f64::min)
            .min(ymax / 10.0)
            * 0.8;
        let lines: Vec<(String, Vec<(f64, f64)>)> = timelines
            .iter()
            .map(|r| {
                let pts = r.timeline.iter().map(|t| (t.t, t.p99_us as f64 / 1e3));
                (format!("{} {}", r.system, r.workload), pts.collect())
            })
            .collect();
        draw_lines(
            &path,
            &Axes {
                caption: format!("{}: p99 latency, second by second", report.name),
                size: (1100, 500),
                x: 0f64..tmax,
                y: ymin..ymax,
                x_desc: "seconds into the measured window",
                y_desc: "p99 (ms)",
                x_labels: None,
                legend: SeriesLabelPosition::UpperRight,
            },
            &lines,
        )?;
        written.push(path.clone());
    }
    Ok(written)
}

/// Writes an axis value as a label.
type LabelFormatter = fn(&f64) -> String;

/// The frame of one chart: a linear x axis and a logarithmic latency axis.
struct Axes<'a> {
    caption: String,
    size: (u32, u32),
    x: std::ops::Range<f64>,
    y: std::ops::Range<f64>,
    x_desc: &'a str,
    y_desc: &'a str,
    /// How many x labels, and how to write them (the default numbers otherwise).
    x_labels: Option<(usize, LabelFormatter)>,
    legend: SeriesLabelPosition,
}

/// Writes `series` (name, points) as lines with a legend to the SVG file `path`; values
/// below the axis are drawn on it.
fn draw_lines(
    path: &Path,
    axes: &Axes,
    series: &[(String, Vec<(f64, f64)>)],
) -> anyhow::Result<()> {
    let root = SVGBackend::new(path, axes.size).into_drawing_area();
    root.fill(&WHITE).map_err(|e| anyhow!("{e}"))?;
    let mut chart = ChartBuilder::on(&root)
        .caption(&axes.caption, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(axes.x.clone(), axes.y.clone().log_scale())
        .map_err(|e| anyhow!("{e}"))?;
    let mut mesh = chart.configure_mesh();
    mesh.x_desc(axes.x_desc)
        .y_desc(axes.y_desc)
        .y_label_formatter(&|y| format!("{y}"));
    if let Some((n, label)) = &axes.x_labels {
        mesh.x_labels(*n).x_label_formatter(label);
    }
    mesh.draw().map_err(|e| anyhow!("{e}"))?;
    let floor = axes.y.start;
    for (i, (name, pts)) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(
                pts.iter().map(|&(x, y)| (x, y.max(floor))),
                color.stroke_width(2),
            ))
            .map_err(|e| anyhow!("{e}"))?
            .label(name)
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(axes.legend.clone())
        .draw()
        .map_err(|e| anyhow!("{e}"))?;
    root.present().map_err(|e| anyhow!("{e}"))?;
    Ok(())
}
