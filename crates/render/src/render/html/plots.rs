//! The plots of the HTML report, drawn with plotters' SVG backend: line charts (loaded latency,
//! cache latency), grouped bars (bandwidth per client, storage latency), a stacked bar (the
//! sleepbench CPU split) and strip plots (one figure across a fleet). Every plot is wrapped in a
//! `<figure>` that says what it draws (`data-plot`) and, per series, its colour and number of
//! points (`data-series`), so a reader (and the browser tests) can find them.
//!
//! Colours are the Okabe-Ito palette, chosen to stay apart for colour-blind readers and in grey
//! scale; series also differ in marker fill, and every value that matters is also text.

use super::escape;
use plotters::coord::ranged1d::{AsRangedCoord, ValueFormatter};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::fmt::Write as _;

/// Series colours (Okabe-Ito), as CSS hex and as plotters colours.
pub const PALETTE: [(&str, RGBColor); 6] = [
    ("#000000", RGBColor(0, 0, 0)),
    ("#E69F00", RGBColor(0xE6, 0x9F, 0x00)),
    ("#0072B2", RGBColor(0x00, 0x72, 0xB2)),
    ("#009E73", RGBColor(0x00, 0x9E, 0x73)),
    ("#CC79A7", RGBColor(0xCC, 0x79, 0xA7)),
    ("#56B4E9", RGBColor(0x56, 0xB4, 0xE9)),
];
/// Highlighted (flagged) points.
pub const ALERT: (&str, RGBColor) = ("#D55E00", RGBColor(0xD5, 0x5E, 0x00));
/// Reference lines (limits, medians).
const REFERENCE: RGBColor = RGBColor(0x55, 0x55, 0x55);

/// Pixel size of the report's plots: two fit side by side at 1280 px.
pub const WIDTH: u32 = 600;
/// Plot height.
pub const HEIGHT: u32 = 360;

/// One line (or set of points) of a chart.
pub struct Series {
    /// Legend name.
    pub name: String,
    /// (x, y) points.
    pub points: Vec<(f64, f64)>,
}

/// A reference line across a chart, labelled.
pub struct Reference {
    /// Where it is, on the axis it crosses.
    pub at: f64,
    /// Its label.
    pub label: String,
}

/// A line chart.
pub struct LineChart {
    /// Identifier (`data-plot`).
    pub id: String,
    /// Caption.
    pub title: String,
    /// x axis label, with unit.
    pub x_label: String,
    /// y axis label, with unit.
    pub y_label: String,
    /// A logarithmic x axis (working sets from KiB to GiB).
    pub x_log: bool,
    /// The lines.
    pub series: Vec<Series>,
    /// Horizontal reference lines (y values).
    pub horizontal: Vec<Reference>,
    /// Vertical reference lines (x values).
    pub vertical: Vec<Reference>,
}

/// A drawn plot, ready for the page.
pub struct Plot {
    /// The `<figure>` element.
    pub html: String,
}

/// The largest magnitude a plot places. Beyond it (a broken or hostile document: 1.7e308 ms of
/// ping) the axis arithmetic overflows to infinity and the tick loop never ends, so such values
/// are left off the axes and listed as text instead.
pub const PLOTTABLE: f64 = 1e15;

/// Whether a plot can place `v`.
pub fn plottable(v: f64) -> bool {
    v.is_finite() && v.abs() <= PLOTTABLE
}

fn bounds(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    let mut lo = f64::INFINITY;
    let mut hi = f64::NEG_INFINITY;
    for v in values.filter(|&v| plottable(v)) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    (lo <= hi).then_some((lo, hi))
}

/// Pads a range by 5 % (and makes an empty one non-empty).
fn padded(lo: f64, hi: f64, from_zero: bool) -> (f64, f64) {
    let lo = if from_zero { lo.min(0.0) } else { lo };
    let span = (hi - lo).abs().max(hi.abs() * 0.1).max(1e-9);
    (
        if from_zero && lo >= 0.0 {
            0.0
        } else {
            lo - span * 0.05
        },
        hi + span * 0.05,
    )
}

/// Formats a tick value briefly.
pub fn tick(v: f64) -> String {
    let a = v.abs();
    if a >= 1e9 {
        format!("{}G", trim(v / 1e9))
    } else if a >= 1e6 {
        format!("{}M", trim(v / 1e6))
    } else if a >= 1e4 {
        format!("{}k", trim(v / 1e3))
    } else {
        trim(v)
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Bytes as KiB/MiB/GiB for a log axis of working sets.
pub fn bytes_tick(v: f64) -> String {
    crate::units::format_binary_size(v.max(0.0) as u64).replace(' ', "")
}

fn figure(id: &str, title: &str, svg: &str, series: &[(String, &str, usize)], note: &str) -> Plot {
    // The plotting library escapes markup in labels, not control characters, which XML does not
    // allow (a page with one does not render) and which have no business in text: written out,
    // as everywhere else on the page.
    let svg: String = svg
        .split('\n')
        .map(crate::render::text::terminal_safe)
        .collect::<Vec<_>>()
        .join("\n");
    let mut data = String::from("[");
    for (i, (name, color, n)) in series.iter().enumerate() {
        if i > 0 {
            data.push(',');
        }
        let _ = write!(
            data,
            "{{\"name\":{},\"color\":\"{color}\",\"points\":{n}}}",
            serde_json::to_string(name).unwrap_or_default()
        );
    }
    data.push(']');
    let legend: String = series
        .iter()
        .map(|(name, color, _)| {
            format!(
                "<span class=\"key\"><span class=\"swatch\" style=\"background:{color}\"></span>{}</span>",
                escape(name)
            )
        })
        .collect();
    let note = if note.is_empty() {
        String::new()
    } else {
        format!(" <span class=\"note\">{}</span>", escape(note))
    };
    Plot {
        html: format!(
            "<figure class=\"plot\" data-plot=\"{}\" data-series='{}'>{svg}<figcaption><b>{}</b>{note}<br>{legend}</figcaption></figure>",
            escape(id),
            escape(&data),
            escape(title)
        ),
    }
}

/// Draws a line chart; `None` when it has no point.
pub fn line_chart(c: &LineChart) -> Option<Plot> {
    let xs = bounds(c.series.iter().flat_map(|s| s.points.iter().map(|p| p.0)))?;
    let ys = bounds(
        c.series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .chain(c.horizontal.iter().map(|r| r.at)),
    )?;
    let (y0, y1) = padded(ys.0, ys.1, true);
    let mut svg = String::new();
    let drawn = if c.x_log {
        let lo = xs.0.max(1.0) / 1.5;
        let hi = xs.1.max(lo * 2.0) * 1.5;
        // Powers of four: 16 KiB, 64 KiB, 256 KiB, ... read better than powers of ten.
        draw_lines(c, &mut svg, (lo..hi).log_scale().base(4.0), y0..y1, &|v| {
            bytes_tick(*v)
        })
    } else {
        let (x0, x1) = padded(xs.0, xs.1, true);
        draw_lines(c, &mut svg, x0..x1, y0..y1, &|v| tick(*v))
    };
    drawn.ok()?;
    let series: Vec<(String, &str, usize)> = c
        .series
        .iter()
        .enumerate()
        .map(|(i, s)| (s.name.clone(), PALETTE[i % PALETTE.len()].0, s.points.len()))
        .collect();
    Some(figure(&c.id, &c.title, &svg, &series, ""))
}

type DrawResult = Result<(), Box<dyn std::error::Error>>;

fn draw_lines<X>(
    c: &LineChart,
    out: &mut String,
    x: X,
    y: std::ops::Range<f64>,
    x_fmt: &dyn Fn(&f64) -> String,
) -> DrawResult
where
    X: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
{
    let root = SVGBackend::with_string(out, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .margin(12)
        .x_label_area_size(42)
        .y_label_area_size(58)
        .build_cartesian_2d(x, y)?;
    chart
        .configure_mesh()
        .x_desc(c.x_label.as_str())
        .y_desc(c.y_label.as_str())
        .x_label_formatter(x_fmt)
        .y_label_formatter(&|v| tick(*v))
        .light_line_style(RGBColor(235, 235, 235))
        .label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 14))
        .draw()?;
    reference_lines(&mut chart, &c.horizontal)?;
    let y_range = chart.y_range();
    for r in &c.vertical {
        chart.draw_series(DashedLineSeries::new(
            [(r.at, y_range.start), (r.at, y_range.end)],
            4,
            4,
            REFERENCE.stroke_width(1),
        ))?;
        chart.draw_series(std::iter::once(Text::new(
            format!(" {}", r.label),
            (r.at, y_range.end),
            label_style(HPos::Left, VPos::Top),
        )))?;
    }
    for (i, s) in c.series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()].1;
        chart.draw_series(LineSeries::new(
            s.points.iter().copied(),
            color.stroke_width(2),
        ))?;
        // Filled markers for even series, hollow for odd: apart in grey scale too.
        let style = if i % 2 == 0 {
            color.filled()
        } else {
            color.stroke_width(2)
        };
        chart.draw_series(s.points.iter().map(|&p| Circle::new(p, 3, style)))?;
    }
    root.present()?;
    Ok(())
}

/// One group of bars (e.g. one client: forward and reverse).
pub struct BarGroup {
    /// The group's label (x axis).
    pub label: String,
    /// One value per bar name (None: not measured).
    pub values: Vec<Option<f64>>,
}

/// A grouped bar chart.
pub struct BarChart {
    /// Identifier (`data-plot`).
    pub id: String,
    /// Caption.
    pub title: String,
    /// y axis label, with unit.
    pub y_label: String,
    /// Names of the bars in each group (the legend).
    pub bars: Vec<String>,
    /// The groups.
    pub groups: Vec<BarGroup>,
    /// Horizontal reference lines.
    pub horizontal: Vec<Reference>,
    /// A logarithmic y axis.
    pub y_log: bool,
}

/// Draws grouped bars; `None` without a value.
pub fn bar_chart(c: &BarChart) -> Option<Plot> {
    let ys = bounds(
        c.groups
            .iter()
            .flat_map(|g| g.values.iter().flatten().copied())
            .chain(c.horizontal.iter().map(|r| r.at)),
    )?;
    let mut svg = String::new();
    let drawn = if c.y_log {
        let lo = ys.0.max(1e-3) / 2.0;
        let hi = ys.1.max(lo * 2.0) * 2.0;
        draw_bars(c, &mut svg, (lo..hi).log_scale(), lo)
    } else {
        let (_, y1) = padded(0.0, ys.1, true);
        draw_bars(c, &mut svg, 0.0..y1, 0.0)
    };
    drawn.ok()?;
    let series: Vec<(String, &str, usize)> = c
        .bars
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let count = c
                .groups
                .iter()
                .filter(|g| g.values.get(i).copied().flatten().is_some())
                .count();
            (name.clone(), PALETTE[i % PALETTE.len()].0, count)
        })
        .collect();
    Some(figure(&c.id, &c.title, &svg, &series, ""))
}

fn draw_bars<Y>(c: &BarChart, out: &mut String, y: Y, base: f64) -> DrawResult
where
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let groups = c.groups.len();
    let labels: Vec<String> = c.groups.iter().map(|g| g.label.clone()).collect();
    let root = SVGBackend::with_string(out, (WIDTH, HEIGHT)).into_drawing_area();
    root.fill(&WHITE)?;
    let x_fmt = |v: &f64| {
        let i = v.round();
        if (v - i).abs() < 0.01 && i >= 0.0 && (i as usize) < labels.len() {
            super::short(&labels[i as usize], 18)
        } else {
            String::new()
        }
    };
    let mut chart = ChartBuilder::on(&root)
        .margin(12)
        .x_label_area_size(42)
        .y_label_area_size(58)
        .build_cartesian_2d(-0.6f64..(groups as f64 - 0.4), y)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(groups.max(1) * 2 + 1)
        .x_label_formatter(&x_fmt)
        .y_desc(c.y_label.as_str())
        .y_label_formatter(&|v| tick(*v))
        .light_line_style(RGBColor(235, 235, 235))
        .label_style(("sans-serif", 13))
        .axis_desc_style(("sans-serif", 14))
        .draw()?;
    let bars = c.bars.len().max(1) as f64;
    let width = 0.8 / bars;
    for (gi, g) in c.groups.iter().enumerate() {
        for (bi, v) in g.values.iter().enumerate() {
            let Some(v) = v else { continue };
            let x0 = gi as f64 - 0.4 + bi as f64 * width;
            let color = PALETTE[bi % PALETTE.len()].1;
            chart.draw_series(std::iter::once(Rectangle::new(
                [(x0 + 0.02, base), (x0 + width - 0.02, *v)],
                color.filled(),
            )))?;
        }
    }
    reference_lines(&mut chart, &c.horizontal)?;
    root.present()?;
    Ok(())
}

/// The references as dashed lines across the chart, each labelled at its right end.
fn reference_lines<'a, X, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    lines: &[Reference],
) -> DrawResult
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let x_range = chart.x_range();
    for r in lines {
        chart.draw_series(DashedLineSeries::new(
            [(x_range.start, r.at), (x_range.end, r.at)],
            6,
            4,
            REFERENCE.stroke_width(1),
        ))?;
        chart.draw_series(std::iter::once(Text::new(
            r.label.clone(),
            (x_range.end, r.at),
            label_style(HPos::Right, VPos::Bottom),
        )))?;
    }
    Ok(())
}

fn label_style(h: HPos, v: VPos) -> TextStyle<'static> {
    ("sans-serif", 12)
        .into_font()
        .color(&REFERENCE)
        .pos(Pos::new(h, v))
}

/// One segment of a stacked bar.
pub struct Segment {
    /// Name.
    pub name: String,
    /// Share, %.
    pub pct: f64,
    /// Colour, CSS hex (`#RRGGBB`).
    pub color: &'static str,
}

fn rgb(hex: &str) -> RGBColor {
    let byte = |i: usize| u8::from_str_radix(hex.get(i..i + 2).unwrap_or("00"), 16).unwrap_or(0);
    RGBColor(byte(1), byte(3), byte(5))
}

/// A horizontal bar from 0 to 100 % in segments, with reference lines (limits).
pub fn stacked_bar(
    id: &str,
    title: &str,
    segments: &[Segment],
    limits: &[Reference],
) -> Option<Plot> {
    if segments.is_empty() {
        return None;
    }
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, 170)).into_drawing_area();
        root.fill(&WHITE).ok()?;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(10)
            .build_cartesian_2d(0f64..100f64, 0f64..1f64)
            .ok()?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .x_desc("share of all CPU time, %")
            .label_style(("sans-serif", 13))
            .axis_desc_style(("sans-serif", 14))
            .draw()
            .ok()?;
        let mut at = 0.0;
        for s in segments {
            let color = rgb(s.color);
            let end = (at + s.pct).min(100.0);
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(at, 0.25), (end, 0.75)],
                    color.filled(),
                )))
                .ok()?;
            at = end;
        }
        for r in limits {
            chart
                .draw_series(LineSeries::new(
                    [(r.at, 0.1), (r.at, 0.9)],
                    ALERT.1.stroke_width(2),
                ))
                .ok()?;
            chart
                .draw_series(std::iter::once(Text::new(
                    format!(" {}", r.label),
                    (r.at, 0.98),
                    ("sans-serif", 12)
                        .into_font()
                        .color(&ALERT.1)
                        .pos(Pos::new(HPos::Left, VPos::Top)),
                )))
                .ok()?;
        }
        root.present().ok()?;
    }
    let series: Vec<(String, &str, usize)> = segments
        .iter()
        .map(|s| (format!("{} {:.1}%", s.name, s.pct), s.color, 1))
        .collect();
    Some(figure(id, title, &svg, &series, ""))
}

/// One point of a strip plot.
pub struct StripPoint {
    /// Whose value (the label shown when flagged).
    pub label: String,
    /// The value.
    pub value: f64,
    /// Flagged: drawn in the alert colour and labelled.
    pub flagged: bool,
}

/// Above this many unflagged machines a strip draws their density (a bar per bin) instead of a
/// dot each: the page of a 10,000-machine fleet stays small and opens quickly. Flagged machines
/// are dots with their names either way.
const STRIP_DOTS_MAX: usize = 400;
/// Bins of a density strip (a bar is 2 to 3 pixels wide).
const STRIP_BINS: usize = 200;

/// One figure across machines: a point per machine along the value axis (spread vertically so
/// they do not hide each other), the reference the verdicts used marked (`median`), flagged
/// machines highlighted and labelled.
pub fn strip_plot(
    id: &str,
    title: &str,
    unit: &str,
    points: &[StripPoint],
    median: Option<f64>,
) -> Option<Plot> {
    let (lo, hi) = bounds(points.iter().map(|p| p.value).chain(median))?;
    let (x0, x1) = padded(lo, hi, false);
    let mut svg = String::new();
    let placed = |p: &&StripPoint| plottable(p.value);
    let normal: Vec<&StripPoint> = points
        .iter()
        .filter(|p| !p.flagged)
        .filter(placed)
        .collect();
    let flagged: Vec<&StripPoint> = points.iter().filter(|p| p.flagged).filter(placed).collect();
    let off_axis: Vec<String> = points
        .iter()
        .filter(|p| !plottable(p.value))
        .map(|p| format!("{}: {:e}", super::short(&p.label, 24), p.value))
        .collect();
    let median = median.filter(|&m| plottable(m));
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, 200)).into_drawing_area();
        root.fill(&WHITE).ok()?;
        let mut chart = ChartBuilder::on(&root)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(10)
            .build_cartesian_2d(x0..x1, 0f64..1f64)
            .ok()?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .y_labels(0)
            .x_desc(unit)
            .x_label_formatter(&|v| tick(*v))
            .label_style(("sans-serif", 13))
            .axis_desc_style(("sans-serif", 14))
            .draw()
            .ok()?;
        if normal.len() <= STRIP_DOTS_MAX {
            // A fixed jitter (golden-ratio sequence): the same input draws the same page.
            let jitter = |i: usize| 0.15 + 0.6 * ((i as f64 * 0.618_033_988_7) % 1.0);
            chart
                .draw_series(normal.iter().enumerate().map(|(i, p)| {
                    Circle::new((p.value, jitter(i)), 3, PALETTE[2].1.mix(0.6).filled())
                }))
                .ok()?;
        } else {
            // Their density: a bar per bin, as tall as its share of the fullest bin.
            let width = (x1 - x0) / STRIP_BINS as f64;
            let mut counts = vec![0usize; STRIP_BINS];
            for p in &normal {
                let bin = ((p.value - x0) / width).max(0.0) as usize;
                counts[bin.min(STRIP_BINS - 1)] += 1;
            }
            let most = counts.iter().copied().max().unwrap_or(1).max(1) as f64;
            chart
                .draw_series(
                    counts
                        .iter()
                        .enumerate()
                        .filter(|(_, c)| **c > 0)
                        .map(|(i, &c)| {
                            let left = x0 + i as f64 * width;
                            let top = 0.05 + 0.85 * c as f64 / most;
                            Rectangle::new(
                                [(left, 0.05), (left + width, top)],
                                PALETTE[2].1.mix(0.6).filled(),
                            )
                        }),
                )
                .ok()?;
        }
        if let Some(m) = median {
            chart
                .draw_series(LineSeries::new(
                    [(m, 0.05), (m, 0.95)],
                    REFERENCE.stroke_width(2),
                ))
                .ok()?;
            // The label sits on the side with room for it.
            let side = if m > (x0 + x1) / 2.0 {
                HPos::Right
            } else {
                HPos::Left
            };
            chart
                .draw_series(std::iter::once(Text::new(
                    format!(" reference {} ", tick(m)),
                    (m, 1.0),
                    label_style(side, VPos::Top),
                )))
                .ok()?;
        }
        for (i, p) in flagged.iter().enumerate() {
            let y = 0.2 + 0.6 * ((i as f64 * 0.382) % 1.0);
            let label = ("sans-serif", 12)
                .into_font()
                .color(&ALERT.1)
                .pos(Pos::new(HPos::Left, VPos::Center));
            chart
                .draw_series(std::iter::once(
                    EmptyElement::at((p.value, y))
                        + Circle::new((0, 0), 5, ALERT.1.filled())
                        + Text::new(super::short(&p.label, 24), (8, 0), label),
                ))
                .ok()?;
        }
        root.present().ok()?;
    }
    let series = vec![
        ("machines".to_string(), PALETTE[2].0, normal.len()),
        ("flagged".to_string(), ALERT.0, flagged.len()),
    ];
    let note = if off_axis.is_empty() {
        String::new()
    } else {
        format!("beyond any axis, not drawn: {}", off_axis.join(", "))
    };
    Some(figure(id, title, &svg, &series, &note))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_no_axis_can_hold_is_listed_not_drawn() {
        let point = |label: &str, value: f64| StripPoint {
            label: label.into(),
            value,
            flagged: false,
        };
        let points = [
            point("a", 0.05),
            point("b", 0.06),
            point("huge", 1.7e308),
            point("inf", f64::INFINITY),
        ];
        let started = std::time::Instant::now();
        let plot = strip_plot("p", "ping", "ms", &points, Some(0.055)).unwrap();
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
        assert!(
            plot.html
                .contains("beyond any axis, not drawn: huge: 1.7e308"),
            "{}",
            plot.html
        );
        assert!(strip_plot("q", "ping", "ms", &[point("only", 1e300)], None).is_none());
    }

    /// A label from a document (a BIOS string at a configuration change) is text in the SVG:
    /// no raw control character (XML forbids them), no markup.
    #[test]
    fn labels_reach_the_svg_as_text() {
        let crafted = "BIOS 1.0 -> \u{1b}]0;x\u{7}\u{1}<script>2.0";
        let chart = LineChart {
            id: "t".into(),
            title: crafted.into(),
            x_label: "run".into(),
            y_label: crafted.into(),
            x_log: false,
            series: vec![Series {
                name: crafted.into(),
                points: vec![(1.0, 1.0), (2.0, 2.0)],
            }],
            horizontal: Vec::new(),
            vertical: vec![Reference {
                at: 1.5,
                label: crafted.into(),
            }],
        };
        let html = line_chart(&chart).unwrap().html;
        assert!(
            !html.chars().any(|c| c.is_control() && c != '\n'),
            "{html:?}"
        );
        assert!(!html.contains("<script>"), "{html}");
        assert!(html.contains("\\u{1b}]0;x\\u{7}\\u{1}"), "{html}");
    }
}
