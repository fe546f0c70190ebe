#!/usr/bin/env python3
"""Draws strata-bench's Strata/peer ratios as an SVG bar chart (no dependencies).

    python3 scripts/chart.py results.json chart.svg

One panel per workload; one group of bars per op; one bar per comparison (Strata's engine
against SQLite, LMDB and LevelDB; the typed layer against GRDB). The axis is logarithmic and
centred on 1×; bars to the right mean Strata is ahead (for ms and bytes, where lower is
better, the ratio is inverted so right still means ahead).
"""
import json
import math
import sys

COMPARISONS = [("strata", "sqlite", "#4C78A8"), ("strata", "lmdb", "#F58518"), ("strata", "leveldb", "#54A24B"),
               ("strata-typed", "grdb", "#B279A2"), ("strata-typed", "memory", "#9D755D"),
               # The typed layer against SQLite (W1, W2: SQLite C; W3: SQLiteStorage) and PostgreSQL (W3).
               ("strata-typed", "sqlite", "#72B7B2"), ("strata-typed", "postgres", "#E45756"),
               # The typed layer against the engine under it, and plain Codable models against GRDB.
               ("strata-typed", "strata", "#FF9DA6"), ("strata-typed-codable", "grdb", "#BAB0AC")]
LOWER_IS_BETTER = {"ms", "µs", "bytes", "×"}


def ratios(results):
    """{workload: [(op, [(label, colour, advantage)])]} where advantage > 1 means Strata ahead."""
    value = {(r["workload"], r["op"], r["engine"]): r for r in results}
    panels = {}
    for r in results:
        panels.setdefault(r["workload"], [])
        if any(op == r["op"] for op, _ in panels[r["workload"]]):
            continue
        bars = []
        for strata, peer, colour in COMPARISONS:
            s, p = value.get((r["workload"], r["op"], strata)), value.get((r["workload"], r["op"], peer))
            if s and p and s["value"] > 0 and p["value"] > 0:
                advantage = s["value"] / p["value"]
                if s["unit"] in LOWER_IS_BETTER:
                    advantage = 1 / advantage
                bars.append((f"{strata} / {peer}", colour, advantage))
        if bars:
            panels[r["workload"]].append((r["op"], bars))
    return panels


def label_for(ratio):
    """2 significant digits below 10, whole numbers above (140, not 1.4e+02)."""
    return f"{ratio:.2g}" if ratio < 10 else f"{ratio:.0f}"


def svg(report):
    panels = ratios(report["results"])
    bar_h, gap, label_w, plot_w, margin = 12, 10, 150, 520, 20
    decades = 3  # the axis spans 10^-3 .. 10^3
    rows = sum(len(bars) * bar_h + gap for ops in panels.values() for _, bars in ops) + 60 * len(panels)
    height = rows + 110
    width = label_w + plot_w + 2 * margin
    centre = margin + label_w + plot_w / 2

    def x(ratio):
        clamped = max(10 ** -decades, min(10 ** decades, ratio))
        return centre + math.log10(clamped) / decades * (plot_w / 2)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{margin}" y="22" font-size="14" font-weight="bold">Strata / peer, {report["records"]:,} records '
           f'(right of 1× = Strata ahead)</text>',
           f'<text x="{margin}" y="38" fill="#555">{report["machine"]["cpu"]}, {report["machine"]["cores"]} cores, {report["machine"]["date"][:10]}</text>']
    y = 60
    for workload, ops in panels.items():
        out.append(f'<text x="{margin}" y="{y + 12}" font-size="13" font-weight="bold">{workload}</text>')
        y += 22
        top = y
        for op, bars in ops:
            out.append(f'<text x="{margin + label_w - 6}" y="{y + len(bars) * bar_h / 2 + 4}" text-anchor="end">{op}</text>')
            for label, colour, advantage in bars:
                x0, x1 = sorted((centre, x(advantage)))
                out.append(f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 1):.1f}" height="{bar_h - 2}" fill="{colour}">'
                           f'<title>{op}: {label} = {advantage:.2f}×</title></rect>')
                tx = x(advantage) + (4 if advantage >= 1 else -4)
                out.append(f'<text x="{tx:.1f}" y="{y + bar_h - 3}" font-size="9" text-anchor="{"start" if advantage >= 1 else "end"}">{label_for(advantage)}×</text>')
                y += bar_h
            y += gap
        for d in range(-decades, decades + 1):
            gx = centre + d / decades * (plot_w / 2)
            out.append(f'<line x1="{gx:.1f}" y1="{top - 4}" x2="{gx:.1f}" y2="{y}" stroke="{"#000" if d == 0 else "#ddd"}"/>')
            out.append(f'<text x="{gx:.1f}" y="{y + 12}" text-anchor="middle" fill="#555">{10 ** d:g}×</text>')
        y += 38
    lx = margin
    for strata, peer, colour in COMPARISONS:
        out.append(f'<rect x="{lx}" y="{y}" width="10" height="10" fill="{colour}"/><text x="{lx + 14}" y="{y + 9}">{strata} / {peer}</text>')
        lx += 135
    out.append('</svg>')
    return "\n".join(out)


def main(draw, usage):
    """Reads the strata-bench JSON named first on the command line and writes `draw(report)` to the second."""
    if len(sys.argv) != 3:
        sys.exit(usage)
    with open(sys.argv[1]) as f:
        report = json.load(f)
    with open(sys.argv[2], "w") as f:
        f.write(draw(report))


if __name__ == "__main__":
    main(svg, __doc__)
