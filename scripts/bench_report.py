#!/usr/bin/env python3
"""The benchmark report of one `scripts/bench.sh --report DIR` run.

bench.sh calls it twice:

- `meta DIR --binary PATH [--setting TEXT]...` when the run starts: writes
  DIR/meta.json (date, git commit, machine, the binary, the settings);
- `render DIR` when the run is done: parses DIR/raw.tsv (one line of
  a2a-bench output per row, with its group, configuration, peer and round),
  writes DIR/results.json and DIR/results.csv (one record per line), the SVG
  charts and DIR/report.md, which shows them.

`--self-test` parses sample lines of every a2a-bench mode, renders a report
of sample records in a temporary directory and checks that every chart is
well-formed XML with the figures in it; exits 1 on the first failure.

Peers: every record names the implementation measured (`peer`, "ours" for
this workspace's servers). When another SDK's servers run beside ours, their
rows carry its name and each chart draws one series per peer.

Standard library only (Python 3.11).

Usage: scripts/bench_report.py meta DIR --binary PATH [--setting TEXT]...
       scripts/bench_report.py render DIR
       scripts/bench_report.py --self-test
"""

import argparse
import csv
import datetime
import hashlib
import json
import math
import os
import platform
import re
import subprocess
import sys
import tempfile
import xml.dom.minidom
from pathlib import Path
from xml.sax.saxutils import escape

# ---------------------------------------------------------------- parsing

# Rust's `{:?}` of a Duration: a decimal number and a unit.
_UNIT_US = {"ns": 1e-3, "µs": 1.0, "us": 1.0, "ms": 1e3, "s": 1e6}
_DURATION = r"([0-9.]+(?:ns|µs|us|ms|s))"


def duration_us(text):
    """A Rust `Duration` as `{:?}` prints it (`942.385µs`), in microseconds."""
    match = re.fullmatch(r"([0-9.]+)(ns|µs|us|ms|s)", text)
    if not match:
        raise ValueError(f"not a duration: {text!r}")
    return float(match.group(1)) * _UNIT_US[match.group(2)]


# One pattern per a2a-bench mode (what each prints on stdout), the kind of
# record it makes, and its fields: a name and how to read the text.
_LINES = [
    (
        "load",
        r"requests=(\d+) throughput=(\d+)/s p50=%D p99=%D p99\.9=%D max=%D",
        [("requests", int), ("throughput_per_s", int), ("p50_us", duration_us),
         ("p99_us", duration_us), ("p999_us", duration_us), ("max_us", duration_us)],
    ),
    (
        "streams",
        r"streams=(\d+) first-event p50=%D p99=%D max=%D.*",
        [("streams", int), ("p50_us", duration_us), ("p99_us", duration_us),
         ("max_us", duration_us)],
    ),
    (
        "memory",
        r"tasks=(\d+) resident_delta=(\d+)KiB per_task=(\d+)B",
        [("tasks", int), ("resident_delta_kib", int), ("bytes_per_task", int)],
    ),
    (
        "recovery",
        r"recovery tasks=(\d+) pending=(\d+): serving GetTask after %D, "
        r"recovery pass done after %D",
        [("tasks", int), ("pending", int), ("serving_us", duration_us),
         ("recovered_us", duration_us)],
    ),
    (
        "seed",
        r"seeded tasks=(\d+) in %D, pending jobs=(\d+) in %D",
        [("tasks", int), ("tasks_us", duration_us), ("pending", int),
         ("pending_us", duration_us)],
    ),
    ("rss", r"resident memory: (\d+) kB", [("rss_kib", int)]),
]
_LINES = [(kind, re.compile(p.replace("%D", _DURATION)), f) for kind, p, f in _LINES]


def parse_line(line):
    """The kind and figures of one line of a2a-bench output.

    A line no pattern knows is kept as kind `unparsed` (the report lists it),
    so a new output format shows up instead of vanishing."""
    for kind, pattern, fields in _LINES:
        match = pattern.fullmatch(line.strip())
        if match:
            record = {"kind": kind}
            for (name, read), text in zip(fields, match.groups()):
                record[name] = read(text)
            return record
    return {"kind": "unparsed"}


def parse_raw(text):
    """The records of raw.tsv: GROUP, CONFIG, PEER, ROUND, LINE per row."""
    records = []
    for number, row in enumerate(text.splitlines(), 1):
        if not row.strip():
            continue
        cells = row.split("\t", 4)
        if len(cells) != 5:
            raise ValueError(f"raw.tsv line {number}: expected 5 tab-separated cells: {row!r}")
        group, config, peer, round_, line = cells
        record = {"group": group, "config": config, "peer": peer, "round": int(round_)}
        record.update(parse_line(line))
        record["raw"] = line
        records.append(record)
    return records


# ---------------------------------------------------------------- SVG charts

_COLORS = ["#3366aa", "#dd7722", "#339955", "#aa3344", "#7755aa", "#777777"]
_FONT = 'font-family="DejaVu Sans, Helvetica, Arial, sans-serif"'


def nice_ticks(high, count=5):
    """Round tick values from 0 to at least `high` (steps of 1, 2 or 5 × 10^k)."""
    if high <= 0:
        return [0, 1]
    raw = high / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    ticks = [0]
    while ticks[-1] < high:
        ticks.append(round(ticks[-1] + step, 10))
    return ticks


def fmt_number(value):
    """A figure for a label: thousands separated, at most 3 significant decimals."""
    if value == 0:
        return "0"
    if abs(value) >= 100 or value == int(value):
        return f"{value:,.0f}"
    if abs(value) >= 10:
        return f"{value:,.1f}"
    return f"{value:.3g}"


def _text_width(text, size=12):
    # Near enough for a sans-serif face: the margins only need to fit labels.
    return len(text) * size * 0.6


def _svg(width, height, title, body):
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" {_FONT} font-size="12">\n'
        f"<title>{escape(title)}</title>\n"
        f'<rect width="{width}" height="{height}" fill="white"/>\n'
        + "".join(body)
        + "</svg>\n"
    )


def _legend(names, x, y):
    parts = []
    for index, name in enumerate(names):
        color = _COLORS[index % len(_COLORS)]
        parts.append(
            f'<rect x="{x:.1f}" y="{y - 10:.1f}" width="12" height="12" fill="{color}"/>'
            f'<text x="{x + 16:.1f}" y="{y:.1f}">{escape(name)}</text>\n'
        )
        x += 16 + _text_width(name) + 18
    return parts


def bar_chart(title, axis_label, categories, series):
    """A horizontal bar chart: one row per category, one bar per series in it.

    `series` is a list of (name, values), each value the figure drawn (or None
    where the series has none) or a (figure, [round figures]) pair: the
    rounds are drawn as dots on the bar, so their spread shows."""
    bar_height = 18
    row_gap = 10
    left = max(_text_width(c) for c in categories) + 20 if categories else 60
    right = 80
    top = 40 + (22 if len(series) > 1 else 0)
    plot_width = 560
    rows = len(categories)
    row_height = bar_height * len(series) + row_gap
    plot_height = max(row_height * rows, 30)
    width = int(left + plot_width + right)
    height = int(top + plot_height + 50)

    def figure(value):
        return value[0] if isinstance(value, tuple) else value

    high = max(
        [figure(v) for _, values in series for v in values if v is not None]
        + [r for _, values in series for v in values if isinstance(v, tuple) for r in v[1]]
        + [0]
    )
    ticks = nice_ticks(high)
    scale = plot_width / ticks[-1]
    body = [
        f'<text x="{width / 2:.1f}" y="22" text-anchor="middle" font-size="15" '
        f'font-weight="bold">{escape(title)}</text>\n'
    ]
    if len(series) > 1:
        body += _legend([name for name, _ in series], left, 48)
    # Grid and x axis with its ticks.
    for tick in ticks:
        x = left + tick * scale
        body.append(
            f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + plot_height}" '
            f'stroke="#dddddd"/>'
            f'<text x="{x:.1f}" y="{top + plot_height + 16}" text-anchor="middle">'
            f"{escape(fmt_number(tick))}</text>\n"
        )
    body.append(
        f'<line x1="{left}" y1="{top + plot_height}" x2="{left + plot_width}" '
        f'y2="{top + plot_height}" stroke="black"/>'
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_height}" stroke="black"/>\n'
        f'<text x="{left + plot_width / 2:.1f}" y="{top + plot_height + 38}" '
        f'text-anchor="middle">{escape(axis_label)}</text>\n'
    )
    for row, category in enumerate(categories):
        y0 = top + row * row_height + row_gap / 2
        body.append(
            f'<text x="{left - 8}" y="{y0 + bar_height * len(series) / 2 + 4:.1f}" '
            f'text-anchor="end">{escape(category)}</text>\n'
        )
        for index, (name, values) in enumerate(series):
            value = values[row]
            if value is None:
                continue
            y = y0 + index * bar_height
            color = _COLORS[index % len(_COLORS)]
            bar = figure(value) * scale
            # The value right of the bar and of every round's dot.
            end = max([figure(value)] + (value[1] if isinstance(value, tuple) else [])) * scale
            body.append(
                f'<rect x="{left}" y="{y + 2:.1f}" width="{bar:.1f}" height="{bar_height - 4}" '
                f'fill="{color}"><title>'
                f'{escape(f"{category}, {name}: {fmt_number(figure(value))}")}'
                f"</title></rect>"
                f'<text x="{left + end + 6:.1f}" y="{y + bar_height - 5:.1f}">'
                f"{escape(fmt_number(figure(value)))}</text>\n"
            )
            if isinstance(value, tuple) and len(value[1]) > 1:
                for each in value[1]:
                    body.append(
                        f'<circle cx="{left + each * scale:.1f}" cy="{y + bar_height / 2:.1f}" '
                        f'r="2.5" fill="white" stroke="black"/>\n'
                    )
    return _svg(width, height, title, body)


def line_chart(title, x_label, y_label, series, notes=()):
    """Lines through points, one per series: (name, [(x, y), ...], markers).

    The y axis runs from 0 to 1, shown in percent (a cumulative
    distribution); `markers` is a list of (x, y, label) to point out, such
    as the percentiles."""
    left, right, top, bottom = 70, 30, 40 + (22 if len(series) > 1 else 0), 60
    plot_width, plot_height = 600, 300
    width = left + plot_width + right
    height = top + plot_height + bottom + 16 * len(notes)
    high = max([x for _, points, _ in series for x, _ in points] + [0])
    ticks = nice_ticks(high)
    x_scale = plot_width / ticks[-1]

    def at(x, y):
        return left + x * x_scale, top + plot_height - y * plot_height

    body = [
        f'<text x="{width / 2:.1f}" y="22" text-anchor="middle" font-size="15" '
        f'font-weight="bold">{escape(title)}</text>\n'
    ]
    if len(series) > 1:
        body += _legend([name for name, _, _ in series], left, 48)
    for tick in ticks:
        x, _ = at(tick, 0)
        body.append(
            f'<line x1="{x:.1f}" y1="{top}" x2="{x:.1f}" y2="{top + plot_height}" '
            f'stroke="#dddddd"/>'
            f'<text x="{x:.1f}" y="{top + plot_height + 16}" text-anchor="middle">'
            f"{escape(fmt_number(tick))}</text>\n"
        )
    for percent in range(0, 101, 20):
        _, y = at(0, percent / 100)
        body.append(
            f'<line x1="{left}" y1="{y:.1f}" x2="{left + plot_width}" y2="{y:.1f}" '
            f'stroke="#dddddd"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{percent}%</text>\n'
        )
    body.append(
        f'<line x1="{left}" y1="{top + plot_height}" x2="{left + plot_width}" '
        f'y2="{top + plot_height}" stroke="black"/>'
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_height}" stroke="black"/>\n'
        f'<text x="{left + plot_width / 2:.1f}" y="{top + plot_height + 38}" '
        f'text-anchor="middle">{escape(x_label)}</text>\n'
        f'<text transform="translate(18 {top + plot_height / 2:.1f}) rotate(-90)" '
        f'text-anchor="middle">{escape(y_label)}</text>\n'
    )
    placed = []  # the labels' boxes so far, so that none covers another
    for index, (name, points, markers) in enumerate(series):
        color = _COLORS[index % len(_COLORS)]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in (at(px, py) for px, py in points))
        body.append(
            f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2">'
            f"<title>{escape(name)}</title></polyline>\n"
        )
        for mx, my, label in markers:
            x, y = at(mx, my)
            # A label right of its marker, or left of it near the right edge
            # (where the tail of a distribution puts p99 and max).
            if x + 6 + _text_width(label) > left + plot_width + right:
                anchor, label_x = "end", x - 6
                box_x = label_x - _text_width(label)
            else:
                anchor, label_x = "start", x + 6
                box_x = label_x
            label_y = y + 14
            box_w = _text_width(label)
            while any(
                abs(label_y - y2) < 14 and box_x < x2 + w2 and x2 < box_x + box_w
                for x2, y2, w2 in placed
            ):
                label_y += 14
            placed.append((box_x, label_y, box_w))
            body.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{color}"/>'
                f'<text x="{label_x:.1f}" y="{label_y:.1f}" text-anchor="{anchor}">'
                f"{escape(label)}</text>\n"
            )
    for number, note in enumerate(notes):
        body.append(
            f'<text x="{left}" y="{top + plot_height + 58 + 16 * number}" fill="#555555">'
            f"{escape(note)}</text>\n"
        )
    return _svg(width, height, title, body)


def percentile_index(count, p):
    """Where a2a-bench reads the `p` percentile of `count` sorted values:
    (count - 1) × p rounded half away from zero, as Rust's `f64::round`
    (Python's `round` rounds half to even)."""
    return min(math.floor((count - 1) * p + 0.5), count - 1)


def cdf_points(sorted_values, most=400):
    """Points of the empirical CDF of sorted values, thinned to about `most`
    (every value's step would make a 1,000-stream chart a 2,000-point path)."""
    count = len(sorted_values)
    stride = max(1, count // most)
    points = [(sorted_values[0], 0.0)]
    for index in range(0, count, stride):
        points.append((sorted_values[index], (index + 1) / count))
    points.append((sorted_values[-1], 1.0))
    return points


# ---------------------------------------------------------------- the report

# How each group of load runs is named in the report, in the order shown;
# the first configuration of a group is what the others are compared with.
_GROUPS = {
    "base": "JSON-RPC vs bare handler",
    "binding": "binding (one server)",
    "log": "conversation log (memory store)",
    "store": "store",
    "stored": "many stored tasks",
    # scripts/peers-bench.sh: each SDK's echo server, one series per peer.
    "peers": "against other SDKs",
}


def _mean(values):
    return sum(values) / len(values)


def load_rows(records):
    """The load runs summed up per (group, config, peer), in the run's order:
    the mean of each figure over the rounds, and the rounds' throughputs."""
    rows = {}
    for record in records:
        if record["kind"] != "load":
            continue
        key = (record["group"], record["config"], record["peer"])
        rows.setdefault(key, []).append(record)
    order = list(_GROUPS)
    summed = []
    def group_order(item):
        group = item[0][0]
        return order.index(group) if group in order else len(order)

    for (group, config, peer), runs in sorted(rows.items(), key=group_order):
        row = {"group": group, "config": config, "peer": peer, "rounds": len(runs)}
        for name in ("throughput_per_s", "p50_us", "p99_us", "p999_us", "max_us"):
            row[name] = _mean([run[name] for run in runs])
        row["throughput_rounds"] = [run["throughput_per_s"] for run in runs]
        row["p99_rounds_ms"] = [run["p99_us"] / 1000 for run in runs]
        summed.append(row)
    # Each figure against the group's first configuration of the same peer.
    for row in summed:
        first = next(r for r in summed if r["group"] == row["group"] and r["peer"] == row["peer"])
        row["relative"] = row["throughput_per_s"] / first["throughput_per_s"]
    return summed


def _category(row):
    return f"{_GROUPS.get(row['group'], row['group'])}: {row['config']}"


def _series_by_peer(rows, value, category=_category):
    """Categories (by default group: config, in order) and one series per peer."""
    categories = list(dict.fromkeys(category(row) for row in rows))
    peers = list(dict.fromkeys(row["peer"] for row in rows))
    series = []
    for peer in peers:
        values = [None] * len(categories)
        for row in rows:
            if row["peer"] == peer:
                values[categories.index(category(row))] = value(row)
        series.append((peer, values))
    return categories, series


def collect_meta(binary, settings):
    """What the report says about the run: when, which commit, which machine."""

    def run(*command):
        try:
            return subprocess.run(
                command, capture_output=True, text=True, check=True
            ).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return ""

    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    meta = {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "commit": run("git", "rev-parse", "HEAD"),
        "branch": run("git", "rev-parse", "--abbrev-ref", "HEAD"),
        # Uncommitted changes mean the commit alone does not say what ran.
        "dirty": bool(run("git", "status", "--porcelain", "--untracked-files=no")),
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "kernel": platform.release(),
        "load_average": " ".join(Path("/proc/loadavg").read_text().split()[:3])
        if Path("/proc/loadavg").exists()
        else "",
        # A run at a low priority on a busy machine measures the machine.
        "niceness": os.nice(0),
        "settings": list(settings),
    }
    if binary:
        path = Path(binary)
        digest = hashlib.sha256()
        with path.open("rb") as file:
            for chunk in iter(lambda: file.read(1 << 20), b""):
                digest.update(chunk)
        meta["binary"] = {
            "path": str(path),
            "built": datetime.datetime.fromtimestamp(
                path.stat().st_mtime, datetime.timezone.utc
            ).strftime("%Y-%m-%d %H:%M:%S UTC"),
            "sha256": digest.hexdigest(),
        }
    return meta


def _ms(us):
    return fmt_number(us / 1000)


def fmt_duration(us):
    """A duration in microseconds in the unit that reads best."""
    for unit, size in (("s", 1e6), ("ms", 1e3), ("µs", 1.0)):
        if us >= size:
            return f"{fmt_number(us / size)} {unit}"
    return f"{fmt_number(us * 1000)} ns"


def render(directory):
    """results.json, results.csv, the charts and report.md from a run's files."""
    directory = Path(directory)
    meta_path = directory / "meta.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    records = parse_raw((directory / "raw.tsv").read_text())
    latencies_path = directory / "stream-first-events.txt"
    latencies = (
        sorted(float(v) for v in latencies_path.read_text().split())
        if latencies_path.exists()
        else []
    )

    (directory / "results.json").write_text(
        json.dumps({"meta": meta, "records": records}, indent=1, ensure_ascii=False) + "\n"
    )
    first = ["group", "config", "peer", "round", "kind"]
    columns = first + sorted({k for r in records for k in r} - set(first) - {"raw"}) + ["raw"]
    with (directory / "results.csv").open("w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=columns)
        writer.writeheader()
        writer.writerows(records)

    rows = load_rows(records)
    charts = {}
    if rows:
        categories, series = _series_by_peer(
            rows, lambda r: (r["throughput_per_s"], r["throughput_rounds"])
        )
        charts["throughput.svg"] = bar_chart(
            "Blocking SendMessage throughput (mean of rounds; dots: each round)",
            "requests per second (higher is better)",
            categories,
            series,
        )
        categories, series = _series_by_peer(
            rows, lambda r: (r["p99_us"] / 1000, r["p99_rounds_ms"])
        )
        charts["p99.svg"] = bar_chart(
            "Blocking SendMessage p99 latency (mean of rounds; dots: each round)",
            "p99 latency in ms (lower is better)",
            categories,
            series,
        )
    streams = [r for r in records if r["kind"] == "streams"]
    stream_series, stream_notes = [], []
    for record in streams:
        name = f"{record['peer']} {record['config']}"
        if latencies and record["peer"] == "ours":
            values = [v / 1000 for v in latencies]
            count = len(values)
            # The ranks a2a-bench reads its percentiles from.
            ranks = [(label, p, values[percentile_index(count, p)])
                     for label, p in (("p50", 0.5), ("p99", 0.99), ("max", 1.0))]
            markers = [(x, p, f"{label} {fmt_number(x)} ms") for label, p, x in ranks]
            stream_series.append((name, cdf_points(values), markers))
            stream_notes.append(f"{count} streams, every first event (stream-first-events.txt).")
        else:
            # Only the percentiles a2a-bench printed: three points of the
            # curve, joined by straight lines (no line from 0: the fastest
            # stream is not known).
            ranks = [(label, p, record[f"{label}_us"] / 1000)
                     for label, p in (("p50", 0.5), ("p99", 0.99), ("max", 1.0))]
            points = [(x, p) for _, p, x in ranks]
            markers = [(x, p, f"{label} {fmt_number(x)} ms") for label, p, x in ranks]
            stream_series.append((name, points, markers))
            stream_notes.append(
                f"{name}: only p50, p99 and max (this a2a-bench has no streams --latencies)."
            )
    if stream_series:
        charts["stream-first-event.svg"] = line_chart(
            f"First event of {streams[0]['streams']} streams opened at once (CDF)",
            "time to first event in ms",
            "streams with their first event",
            stream_series,
            stream_notes,
        )
    memory = [r for r in records if r["kind"] == "memory"]
    if memory:
        categories, series = _series_by_peer(
            memory, lambda r: r["bytes_per_task"], lambda r: r["config"]
        )
        charts["memory.svg"] = bar_chart(
            "Resident memory per stored completed task",
            "bytes per task (lower is better)",
            categories,
            series,
        )
    for name, svg in charts.items():
        (directory / name).write_text(svg)

    (directory / "report.md").write_text(report_markdown(meta, records, rows, latencies, charts))
    return charts


def report_markdown(meta, records, rows, latencies, charts):
    """The report's text: the run, the charts and every figure in tables."""
    out = ["# Benchmark report", ""]
    commit = meta.get("commit", "?")
    dirty = " with uncommitted changes" if meta.get("dirty") else ""
    out += [
        f"`scripts/bench.sh --report` run of {meta.get('date', '?')}, commit "
        f"`{commit[:12]}` ({meta.get('branch', '?')}){dirty}. Wall-clock figures from one "
        "machine shared with other work: compare configurations of one run, not runs.",
        "",
        "| machine | |",
        "|---|---|",
        f"| CPU | {meta.get('cpu', '?')} |",
        f"| cores (nproc) | {meta.get('nproc', '?')} |",
        f"| kernel | {meta.get('kernel', '?')} |",
        f"| load average at start | {meta.get('load_average', '?')} |",
        f"| load average at end | {meta.get('load_average_end', '?')} |",
        f"| the run's niceness | {meta.get('niceness', '?')} |",
    ]
    binary = meta.get("binary")
    if binary:
        out.append(
            f"| a2a-bench | `{binary['path']}`, built {binary['built']}, "
            f"sha256 `{binary['sha256'][:16]}` |"
        )
    out += ["", "Settings: " + "; ".join(meta.get("settings", [])) + ".", ""]

    if rows:
        out += [
            "## Blocking SendMessage",
            "",
            "An echo agent, blocking `SendMessage`, each configuration on a fresh server. "
            "`relative` is the throughput against the group's first configuration.",
            "",
            "![throughput per configuration](throughput.svg)",
            "",
            "![p99 latency per configuration](p99.svg)",
            "",
            "| group | configuration | peer | rounds | requests/s (each round) | relative "
            "| p50 ms | p99 ms | p99.9 ms | max ms |",
            "|---|---|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for row in rows:
            each = " / ".join(fmt_number(v) for v in row["throughput_rounds"])
            out.append(
                f"| {_GROUPS.get(row['group'], row['group'])} | {row['config']} | {row['peer']} "
                f"| {row['rounds']} | {fmt_number(row['throughput_per_s'])} ({each}) "
                f"| {row['relative'] * 100:.0f}% | {_ms(row['p50_us'])} | {_ms(row['p99_us'])} "
                f"| {_ms(row['p999_us'])} | {_ms(row['max_us'])} |"
            )
        spread = [
            row for row in rows
            if len(row["throughput_rounds"]) > 1
            and max(row["throughput_rounds"]) > 1.2 * min(row["throughput_rounds"])
        ]
        if spread:
            out += [
                "",
                "Rounds more than 20% apart, too noisy to compare closely: "
                + "; ".join(_category(row) for row in spread)
                + ".",
            ]
        out.append("")

    streams = [r for r in records if r["kind"] == "streams"]
    if streams:
        out += ["## Streams: time to first event", ""]
        if "stream-first-event.svg" in charts:
            out += ["![first-event distribution](stream-first-event.svg)", ""]
        out += [
            "| configuration | peer | streams | p50 ms | p99 ms | max ms |",
            "|---|---|---:|---:|---:|---:|",
        ]
        for r in streams:
            out.append(
                f"| {r['config']} | {r['peer']} | {r['streams']} | {_ms(r['p50_us'])} "
                f"| {_ms(r['p99_us'])} | {_ms(r['max_us'])} |"
            )
        if latencies:
            out += ["", "Every stream's first-event latency (µs, sorted): "
                    "`stream-first-events.txt`."]
        out.append("")

    memory = [r for r in records if r["kind"] in ("memory", "rss")]
    if memory:
        out += ["## Memory", ""]
        if "memory.svg" in charts:
            out += ["![memory per stored task](memory.svg)", ""]
        out += ["| what | peer | figure |", "|---|---|---|"]
        for r in memory:
            if r["kind"] == "memory":
                out.append(
                    f"| {r['config']}: per stored completed task ({r['tasks']:,} tasks) "
                    f"| {r['peer']} | {r['bytes_per_task']:,} B |"
                )
            else:
                out.append(
                    f"| {r['config']}: server resident memory after the load | {r['peer']} "
                    f"| {r['rss_kib'] / 1024:,.1f} MiB |"
                )
        out.append("")

    durable = [r for r in records if r["kind"] in ("recovery", "seed")]
    if durable:
        out += [
            "## Durable stores: recovery and seeding",
            "",
            "| what | store | figure |",
            "|---|---|---|",
        ]
        for r in durable:
            if r["kind"] == "recovery":
                out.append(
                    f"| restart on {r['tasks']:,} tasks and {r['pending']:,} pending jobs "
                    f"| {r['config']} | serving GetTask after {fmt_duration(r['serving_us'])}, "
                    f"recovery pass done after {fmt_duration(r['recovered_us'])} |"
                )
            else:
                out.append(
                    f"| seed {r['tasks']:,} tasks, {r['pending']:,} pending jobs | {r['config']} "
                    f"| tasks in {fmt_duration(r['tasks_us'])}, "
                    f"jobs in {fmt_duration(r['pending_us'])} |"
                )
        out.append("")

    unparsed = [r for r in records if r["kind"] == "unparsed"]
    if unparsed:
        out += ["## Lines not understood", ""]
        out += [f"- {r['group']} / {r['config']}: `{r['raw']}`" for r in unparsed]
        out.append("")
    out += [
        "## Files",
        "",
        "`results.json` (the run and every record), `results.csv` (one row per record), "
        "`raw.tsv` (a2a-bench's lines as printed). Peers other than `ours` get rows of their "
        "own and a series of their own in each chart.",
        "",
    ]
    return "\n".join(out)


# ---------------------------------------------------------------- self-test

# Lines as a2a-bench prints them (the first is a real run's), in raw.tsv
# rows; "peer & co" stands for another SDK (and a name to escape in SVG).
_SAMPLE_RAW = """\
base\tbare\tours\t1\trequests=521747 throughput=65218/s p50=942.385µs p99=1.989536ms \
p99.9=3.887505ms max=8.166614ms
base\tsdk\tours\t1\trequests=401234 throughput=50154/s p50=1.2ms p99=2.5ms p99.9=4.1ms max=9ms
base\tbare\tours\t2\trequests=520000 throughput=65000/s p50=950µs p99=2.0ms p99.9=3.9ms max=8.2ms
base\tsdk\tours\t2\trequests=400000 throughput=50000/s p50=1.21ms p99=2.6ms p99.9=4.2ms max=10ms
base\tsdk\tpeer & co\t1\trequests=200000 throughput=25000/s p50=2.5ms p99=5.5ms p99.9=7ms max=12ms
binding\tsdk gRPC\tours\t1\trequests=200000 throughput=25000/s p50=2.5ms p99=5ms p99.9=6ms max=11ms
log\tlog off\tours\t1\trequests=80000 throughput=40000/s p50=1.2ms p99=2.5ms p99.9=4ms max=9ms
log\tlog off\tours\t2\trequests=40000 throughput=20000/s p50=2.4ms p99=5ms p99.9=8ms max=18ms
store\tmemory\tours\t1\trequests=400000 throughput=50000/s p50=1.2ms p99=2.5ms p99.9=4ms max=9ms
store\tsqlite\tours\t1\trequests=200000 throughput=25000/s p50=2.4ms p99=9.5ms p99.9=14ms max=30ms
streams\tsdk JSON-RPC\tours\t1\tstreams=1000 first-event p50=19.2ms p99=38.5ms max=40.1ms \
server cpu until p99=30ms until all=31ms page-faults until p99=10 until all=12
memory\tmemory store\tours\t1\ttasks=200000 resident_delta=144336KiB per_task=739B
recovery\tsqlite\tours\t1\trecovery tasks=100000 pending=1000: serving GetTask after 120.5ms, \
recovery pass done after 1.5s
seed\tsqlite\tours\t1\tseeded tasks=20000 in 1.2s, pending jobs=0 in 250ns
stored\tsqlite 20000 stored\tours\t1\tresident memory: 45678 kB
stored\tsqlite 20000 stored\tours\t1\tsomething new=1
"""


def _check(condition, what=""):
    """An assertion that `python3 -O` keeps."""
    if not condition:
        raise AssertionError(what)


def self_test():
    """Checks the parser and the charts; raises AssertionError on a failure."""
    _check(duration_us("942.385µs") == 942.385)
    _check(duration_us("1.989536ms") == 1989.536)
    _check(duration_us("2s") == 2e6)
    _check(duration_us("250ns") == 0.25)
    try:
        duration_us("12 ms")
    except ValueError:
        pass
    else:
        raise AssertionError("'12 ms' parsed as a duration")
    load = parse_line(
        "requests=521747 throughput=65218/s p50=942.385µs p99=1.989536ms "
        "p99.9=3.887505ms max=8.166614ms"
    )
    _check(load == {
        "kind": "load", "requests": 521747, "throughput_per_s": 65218, "p50_us": 942.385,
        "p99_us": 1989.536, "p999_us": 3887.505, "max_us": 8166.614,
    }, load)
    streams = parse_line("streams=1000 first-event p50=19.2ms p99=38.5ms max=40.1ms")
    _check(streams["kind"] == "streams" and streams["p99_us"] == 38500, streams)
    _check(streams["streams"] == 1000, streams)
    memory = parse_line("tasks=200000 resident_delta=144336KiB per_task=739B")
    _check(memory["bytes_per_task"] == 739, memory)
    _check(parse_line("resident memory: 45678 kB") == {"kind": "rss", "rss_kib": 45678})
    _check(parse_line("sqlite/memory throughput: 50%")["kind"] == "unparsed")
    records = parse_raw(_SAMPLE_RAW)
    _check(len(records) == 16 and records[0]["peer"] == "ours" and records[2]["round"] == 2)
    _check([fmt_duration(us) for us in (0.25, 942.385, 1989.536, 1.5e6)] == [
        "250 ns", "942 µs", "1.99 ms", "1.5 s"])
    _check([percentile_index(6, 0.5), percentile_index(1000, 0.99)] == [3, 989])
    _check(nice_ticks(65218) == [0, 20000, 40000, 60000, 80000], nice_ticks(65218))
    _check(nice_ticks(0.7) == [0, 0.2, 0.4, 0.6, 0.8], nice_ticks(0.7))
    rows = load_rows(records)
    sdk = next(r for r in rows if r["config"] == "sdk" and r["peer"] == "ours")
    _check(sdk["throughput_per_s"] == 50077 and sdk["throughput_rounds"] == [50154, 50000], sdk)
    sqlite = next(r for r in rows if r["config"] == "sqlite")
    _check(sqlite["relative"] == 0.5, sqlite)

    with tempfile.TemporaryDirectory() as directory:
        run = Path(directory)
        (run / "raw.tsv").write_text(_SAMPLE_RAW)
        (run / "meta.json").write_text(json.dumps(collect_meta(None, ["SECONDS_PER_RUN=2"])))
        # With the percentiles only, then with every stream's latency.
        for latencies in (None, [1000 * i for i in range(1, 1001)]):
            if latencies:
                (run / "stream-first-events.txt").write_text("".join(f"{v}\n" for v in latencies))
            charts = render(run)
            expected = {"throughput.svg", "p99.svg", "stream-first-event.svg", "memory.svg"}
            _check(set(charts) == expected, charts)
            for name in charts:
                document = xml.dom.minidom.parse(str(run / name))
                svg = document.documentElement
                _check(svg.tagName == "svg", name)
                _check(svg.getAttribute("xmlns") == "http://www.w3.org/2000/svg", name)
            throughput = (run / "throughput.svg").read_text()
            # Every configuration and peer is drawn, with its figure beside it.
            for text in ("65,109", "50,077", "25,000", "store: sqlite", "peer &amp; co",
                         "requests per second"):
                _check(text in throughput, text)
            cdf = (run / "stream-first-event.svg").read_text()
            # The percentiles at the ranks a2a-bench reads them from.
            marks = ("p50 501 ms", "p99 990 ms", "max 1,000 ms") if latencies else (
                "p50 19.2 ms", "p99 38.5 ms", "max 40.1 ms")
            for mark in marks:
                _check(mark in cdf, mark)
            report = (run / "report.md").read_text()
            for text in ("![throughput per configuration](throughput.svg)", "| 739 B |",
                         "Rounds more than 20% apart, too noisy to compare closely: "
                         "conversation log (memory store): log off.",
                         "something new=1", "SECONDS_PER_RUN=2", "| 50% |"):
                _check(text in report, text)
            saved = json.loads((run / "results.json").read_text())
            _check(len(saved["records"]) == 16)
            with (run / "results.csv").open() as file:
                _check(len(list(csv.DictReader(file))) == 16)


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--self-test", action="store_true", help="check the parser and the charts")
    commands = parser.add_subparsers(dest="command")
    meta = commands.add_parser("meta", help="write DIR/meta.json when a run starts")
    meta.add_argument("directory")
    meta.add_argument("--binary", help="the a2a-bench binary the run uses")
    meta.add_argument("--setting", action="append", default=[], help="a run setting to state")
    meta.add_argument(
        "--end", action="store_true", help="add the load average at the end to DIR/meta.json"
    )
    render_command = commands.add_parser("render", help="write the report of DIR")
    render_command.add_argument("directory")
    args = parser.parse_args()
    if args.self_test:
        self_test()
        print("bench_report self-test: ok")
    elif args.command == "meta":
        path = Path(args.directory) / "meta.json"
        if args.end:
            meta = json.loads(path.read_text())
            meta["load_average_end"] = " ".join(Path("/proc/loadavg").read_text().split()[:3])
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            meta = collect_meta(args.binary, args.setting)
        path.write_text(json.dumps(meta, indent=1) + "\n")
    elif args.command == "render":
        render(args.directory)
    else:
        parser.print_usage(sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
