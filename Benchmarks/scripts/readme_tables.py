#!/usr/bin/env python3
"""Renders the README's benchmark tables from a strata-bench results file (.md).

    python3 scripts/readme_tables.py results/latest.md readme      # README.md's W1, W2 and W4 tables
    python3 scripts/readme_tables.py results/latest.md targets     # Benchmarks/README.md's target table

Figures are copied as strata-bench printed them; only the target verdicts are computed.
"""
import re
import sys


def sections(text):
    """{workload: (figures, ratios)}, each a {op: {column: cell}} read from the md tables."""
    found = {}
    for part in re.split(r"^### ", text, flags=re.M)[1:]:
        name = part.split("\n", 1)[0].strip()
        tables, current = [], []
        for line in part.split("\n"):
            if line.startswith("|"):
                current.append(line)
            elif current:
                tables.append(current)
                current = []
        if current:
            tables.append(current)
        parsed = []
        for table in tables:
            header = [c.strip() for c in table[0].strip("|").split("|")]
            rows = {}
            for line in table[2:]:
                cells = [c.strip() for c in line.strip("|").split("|")]
                rows[cells[0]] = dict(zip(header, cells))
            parsed.append(rows)
        found[name] = parsed
    return found


def ratio(cell):
    return float(cell.rstrip("×")) if cell and cell != "—" else None


def megabytes(cell):
    return f"{float(cell.rstrip('M')):.1f}" if cell.endswith("M") else cell


W1_ROWS = [
    ("insert.batch", "insert.batch (records/s, durable per 1,000)"),
    ("insert.single-tx", "insert.single-tx (records/s)"),
    ("get", "get (lookups/s)"),
    ("scan.filter", "scan.filter (records/s)"),
    ("scan.index", "scan.index (queries of ~150k users/s)"),
    ("update", "update (updates/s)"),
    ("commit.durable", "commit.durable (tx/s)"),
    ("reopen", "reopen (ms)"),
    ("size.compacted", "size after compaction (MB)"),
    ("write.amplification", "write amplification, insert.batch"),
]
ENGINES = ["strata", "strata-typed", "strata-typed-codable", "sqlite", "grdb", "lmdb", "leveldb"]


def w1_table(w1):
    out = ["| W1 op | Strata engine | typed layer | typed, Codable | SQLite | GRDB | LMDB | LevelDB |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for op, label in W1_ROWS:
        row = w1[op]
        cells = []
        for engine in ENGINES:
            cell = row.get(engine, "—")
            if op == "size.compacted":
                cell = megabytes(cell) if cell != "—" else megabytes(w1["size"][engine]) + " (none)"
            if op == "write.amplification" and cell != "—":
                cell = cell + "×"
            if op == "get" and engine == "grdb" and "get.fetchOne" in w1:
                cell = f"{cell} ({w1['get.fetchOne']['grdb']} with `fetchOne(key:)`)"
            cells.append(cell)
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    return out


def w2_table(w2):
    out = ["| W2 op (4 KiB documents) | Strata engine | typed layer | typed, Codable | SQLite | GRDB | LMDB | LevelDB |",
           "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for op, label in [("insert.batch", "insert.batch (documents/s)"), ("get", "get (lookups/s)"),
                      ("scan.filter", "scan.filter (documents/s)"), ("size", "size, no compaction (MB)")]:
        cells = [megabytes(w2[op][e]) if op == "size" else w2[op][e] for e in ENGINES]
        out.append(f"| {label} | " + " | ".join(cells) + " |")
    return out


def w4_table(w4):
    out = ["| W4 op | typed layer | GRDB | SQLite (C) |", "| --- | --- | --- | --- |"]
    for op, row in w4.items():
        if op == "insert":
            continue
        label = "keyset paging (pages/s)" if op == "keyset paging" else op
        out.append(f"| {label} | {row['strata-typed']} | {row['grdb']} | {row['sqlite']} |")
    return out


def verdict(values, limits):
    return "yes" if all(v is not None and v >= l for v, l in zip(values, limits)) else "**no**"


def targets(found, commit_fraction):
    w1, w1r = found["W1"][0], found["W1"][1]
    w2r, w3r = found["W2"][1], found["W3"][1]
    rows = ["| target | this run | met? |", "| --- | --- | --- |"]

    def typed(op, ratios, name):
        g, s = ratio(ratios[op]["strata-typed / grdb"]), ratio(ratios[op]["strata-typed / sqlite"])
        rows.append(f"| typed {name} {op} ≥ 2× GRDB, ≥ 1× SQLite | {g:.2f}×, {s:.2f}× | {verdict([g, s], [2, 1])} |")

    for op in ["insert.batch", "insert.single-tx"]:
        typed(op, w1r, "W1")
    g, s, e = (ratio(w1r["get"][c]) for c in ["strata-typed / grdb", "strata-typed / sqlite", "strata-typed / strata"])
    rows.append(f"| typed W1 get ≥ 2× GRDB, ≥ 1× SQLite; ≥ 0.7× the engine | {g:.2f}×, {s:.2f}×; {e:.2f}× | {verdict([g, s, e], [2, 1, 0.7])} |")
    typed("scan.filter", w1r, "W1")
    e = ratio(w1r["scan.filter"]["strata-typed / strata"])
    rows.append(f"| typed W1 scan.filter ≥ 0.5× the engine | {e:.2f}× | {verdict([e], [0.5])} |")
    for op in ["scan.index", "update"]:
        typed(op, w1r, "W1")
    for op in ["insert.batch", "get", "scan.filter"]:
        typed(op, w2r, "W2")
    p, r = ratio(w3r["persist"]["strata-typed / memory"]), ratio(w3r["read all"]["strata-typed / memory"])
    rows.append(f"| W3 persist, read ≥ 0.6× the in-memory storage | {p:.2f}×, {r:.2f}× | {verdict([p, r], [0.6, 0.6])} |")
    for op, peer in [("insert.batch", "leveldb"), ("insert.single-tx", "lmdb"), ("get", "lmdb"),
                     ("scan.filter", "lmdb"), ("scan.index", "lmdb")]:
        v = ratio(w1r[op][f"strata / {peer}"])
        rows.append(f"| engine {op} ≥ 1× {'LevelDB' if peer == 'leveldb' else 'LMDB'} | {v:.2f}× | {verdict([v], [1])} |")
    rows.append(f"| engine commit.durable ≥ 0.9× the preallocated write+fdatasync limit (measured beside it) | {commit_fraction:.2f} | {verdict([commit_fraction], [0.9])} |")
    settled = float(w1["size.settled"]["strata"].rstrip("M")) / float(w1["size"]["leveldb"].rstrip("M"))
    rows.append(f"| engine size ≤ 1× LevelDB with no explicit compaction | {settled:.2f}× settled | {'yes' if settled <= 1 else '**no**'} |")
    worst = float(w1["compact.worst-commit"]["strata"])
    rows.append(f"| compaction: slowest commit beside it < 10 ms (1M) | {worst:.2f} ms (writers' pause {w1['compact.writer-pause']['strata']} ms) | {'yes' if worst < 10 else '**no**'} |")
    return rows


def main():
    text = open(sys.argv[1]).read()
    found = sections(text)
    what = sys.argv[2] if len(sys.argv) > 2 else "readme"
    if what == "readme":
        lines = w1_table(found["W1"][0]) + [""] + w2_table(found["W2"][0]) + [""] + w4_table(found["W4"][0])
    else:
        fraction = float(re.search(r"strata commit\.durable: ([0-9.]+) of write\+fdatasync preallocated", text).group(1))
        lines = targets(found, fraction)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
