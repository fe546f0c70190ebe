#!/usr/bin/env python3
"""Draws W1's figures against N from a multi-size strata-bench run as an SVG (no dependencies).

    swift run -c release strata-bench --records 100000,1000000,3000000 --workloads W1 \
        --engines strata,lmdb,leveldb --json scaling.json
    python3 scripts/scaling_chart.py scaling.json scaling.svg

One panel per op; one line per engine; both axes logarithmic. Throughput should stay flat as
N grows (a falling line is an engine slowing down with its data); size, write amplification
and memory are drawn the same way, lower being better.
"""
import math

OPS = ["insert.batch", "insert.single-tx", "get", "get.threads2", "get.batched", "scan.filter", "scan.filter.threads2",
       "scan.index", "update", "commit.durable", "size", "write.amplification", "memory.peak", "open.after-crash"]
COLOURS = {"strata": "#4C78A8", "strata-typed": "#B279A2", "lmdb": "#F58518", "leveldb": "#54A24B",
           "sqlite": "#72B7B2", "grdb": "#E45756", "strata-typed-codable": "#9D755D"}


def series(results):
    """{op: {engine: [(N, value)]}} for the figures that carry their N."""
    by_op = {}
    for r in results:
        if r.get("records") is None or r["op"] not in OPS or r["value"] <= 0:
            continue
        by_op.setdefault(r["op"], {}).setdefault(r["engine"], []).append((r["records"], r["value"], r["unit"]))
    return by_op


def label(value):
    for bound, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if value >= bound:
            return f"{value / bound:.3g}{suffix}"
    return f"{value:.3g}"


def panel(op, engines, x0, y0, w, h):
    points = [p for line in engines.values() for p in line]
    ns = sorted({n for n, _, _ in points})
    lo, hi = min(v for _, v, _ in points), max(v for _, v, _ in points)
    lo, hi = math.log10(lo) - 0.15, math.log10(hi) + 0.15
    nlo, nhi = math.log10(ns[0]), math.log10(ns[-1])
    unit = points[0][2]

    def x(n):
        return x0 + 40 + (0.5 if nhi == nlo else (math.log10(n) - nlo) / (nhi - nlo)) * (w - 80)

    def y(v):
        return y0 + h - 25 - (math.log10(v) - lo) / (hi - lo) * (h - 55)

    out = [f'<rect x="{x0}" y="{y0}" width="{w}" height="{h}" fill="none" stroke="#ddd"/>',
           f'<text x="{x0 + 8}" y="{y0 + 16}" font-weight="bold">{op} ({unit})</text>']
    for n in ns:
        out.append(f'<text x="{x(n):.1f}" y="{y0 + h - 8}" text-anchor="middle" fill="#666">N={label(n)}</text>')
    for engine, line in sorted(engines.items()):
        colour = COLOURS.get(engine, "#333")
        line = sorted(line)
        path = " ".join(f"{x(n):.1f},{y(v):.1f}" for n, v, _ in line)
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for n, v, _ in line:
            out.append(f'<circle cx="{x(n):.1f}" cy="{y(v):.1f}" r="3" fill="{colour}"/>')
            out.append(f'<text x="{x(n) + 5:.1f}" y="{y(v) - 4:.1f}" fill="{colour}" font-size="10">{label(v)}</text>')
    return out


def svg(report):
    data = series(report["results"])
    ops = [op for op in OPS if op in data]
    w, h, columns = 330, 190, 3
    rows = math.ceil(len(ops) / columns)
    engines = sorted({e for op in ops for e in data[op]})
    width, height = columns * (w + 10) + 10, rows * (h + 10) + 60
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="10" y="20" font-size="13" font-weight="bold">W1 against N: {report.get("command", "")}</text>']
    for i, engine in enumerate(engines):
        out.append(f'<rect x="{10 + i * 130}" y="30" width="12" height="12" fill="{COLOURS.get(engine, "#333")}"/>')
        out.append(f'<text x="{26 + i * 130}" y="40">{engine}</text>')
    for i, op in enumerate(ops):
        out += panel(op, data[op], 10 + (i % columns) * (w + 10), 50 + (i // columns) * (h + 10), w, h)
    out.append('</svg>')
    return "\n".join(out)


if __name__ == "__main__":
    from chart import main  # the ratio chart's script, beside this one
    main(svg, __doc__)
