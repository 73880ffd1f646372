#!/usr/bin/env python3
"""The tables of docs/validation.md, made from the accuracy record.

    python3 scripts/validation_tables.py [--write | --check] [--record FILE] [--doc FILE]

examples/validation/accuracy.json (written by `shardsim validate examples/validation --record`,
scripts/record_accuracy.sh) holds every validated row's |error|, its signed direction and its
groups (split, kind, source, framework, chip, precision); CTest's validate.accuracy holds the
record to what the simulator predicts now (within its tolerance). This script makes three tables
of it, each between a marker line `<!-- validation_tables.py: NAME -->` and
`<!-- end validation_tables.py -->` in the doc:

- bars: the issues' accuracy bars (13: held out per framework, out of memory, peak memory, the
  2021-22 tables; 14: serving held out; 19: held-out Blackwell rows), each with what the record
  gives and whether it is met;
- summary: per set and split, step time or throughput rows (count, mean |error|, max, signed
  speed), peak-memory rows (count, mean, max, signed) and configurations that ran judged out of
  memory;
- development: the development rows of the modern set and of this project's GPU runs, grouped by
  chip, framework, GEMM precision and source (what `validate examples/validation --split
  development` prints);
- held_out: the modern set's held-out rows, grouped the same way (`validate
  examples/validation/modern --split held_out`).

Signed figures are the mean of each row's `bias`: predicted speed over measured speed less 1 for
time and throughput rows (positive: predicted too fast), (predicted - published) / published for
memory rows (positive: predicted too much), with the share of rows above 0.

Without an option it prints the tables; --write puts them into the doc; --check exits 1 when the
doc's tables are not what the record gives (CTest docs.validation_tables).
"""
import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN = "<!-- validation_tables.py: {} -->"
END = "<!-- end validation_tables.py -->"
MEMORY_METRICS = ("activations_GiB", "weights_and_optimizer_GiB", "peak_memory_GiB")


def row_set(row):
    """The folder of examples/validation a row's scenario is in ("" for the 2021-22 tables)."""
    return row["scenario"].split("/")[0] if "/" in row["scenario"] else ""


class Stats:
    def __init__(self, rows):
        self.n = len(rows)
        self.mean = sum(r["abs_error"] for r in rows) / self.n if rows else 0.0
        self.max = max((r["abs_error"] for r in rows), default=0.0)
        self.bias = sum(r["bias"] for r in rows) / self.n if rows else 0.0
        self.high = sum(1 for r in rows if r["bias"] > 0)

    def share_high(self):
        return f"{100 * self.high / self.n:.0f}%" if self.n else "0%"


def pct(x):
    return f"{100 * x:.1f}%"


def signed(x):
    return f"{100 * x:+.1f}%"


def out_of_memory(rows):
    """Configurations that ran (a time row, or a published peak) and do not fit: scenarios, not rows."""
    ran = {}
    for r in rows:
        if r["kind"] != "memory" or r["metric"] == "peak_memory_GiB":
            ran[r["scenario"]] = not r["fits"]
    return sum(ran.values())


def summary(rows):
    parts = [
        ("2021-22 tables (in-sample)", lambda r: row_set(r) == "" and r["split"] == "in_sample"),
        ("modern, development", lambda r: row_set(r) == "modern" and r["split"] == "development"),
        ("modern, held out", lambda r: row_set(r) == "modern" and r["split"] == "held_out"),
    ]
    for split in ("development", "held_out"):
        chips = sorted({r["chip"] for r in rows if row_set(r) == "realexec" and r["split"] == split})
        for chip in chips:
            parts.append((f"this project's CUDA runs on {chip} ({split.replace('_', ' ')})",
                          lambda r, s=split, c=chip: row_set(r) == "realexec" and r["split"] == s and r["chip"] == c))
    for split in ("development", "held_out"):
        parts.append((f"serving, {split.replace('_', ' ')}",
                      lambda r, s=split: row_set(r) == "serving" and r["split"] == s))
    out = [
        "| rows | step time or throughput: rows, mean \\|error\\|, max, speed (share fast) "
        "| peak memory: rows, mean \\|error\\|, max, signed (share over) | configurations that ran judged out of memory |",
        "| --- | --- | --- | --- |",
    ]
    for label, pick in parts:
        mine = [r for r in rows if pick(r)]
        if not mine:
            continue
        t = Stats([r for r in mine if r["kind"] != "memory"])
        m = Stats([r for r in mine if r["kind"] == "memory"])
        time_cell = f"{t.n}, {pct(t.mean)}, {pct(t.max)}, {signed(t.bias)} ({t.share_high()})" if t.n else ""
        mem_cell = f"{m.n}, {pct(m.mean)}, {pct(m.max)}, {signed(m.bias)} ({m.share_high()})" if m.n else ""
        oom = "" if row_set(mine[0]) == "serving" else str(out_of_memory(mine))
        out.append(f"| {label} | {time_cell} | {mem_cell} | {oom} |")
    return out


def grouped(rows):
    """All, then one group per chip, framework, precision and source, as `validate` prints them."""
    out = ["| group | rows | mean \\|error\\| | max | speed (share fast) |", "| --- | --- | --- | --- | --- |"]

    def line(name, mine):
        st = Stats(mine)
        out.append(f"| {name} | {st.n} | {pct(st.mean)} | {pct(st.max)} | {signed(st.bias)} ({st.share_high()}) |")

    line("all", rows)
    for key in ("chip", "framework", "precision", "source"):
        for value in sorted({r[key] for r in rows if r[key]}):
            line(f"{key} {value}", [r for r in rows if r[key] == value])
    return out


def bars(rows):
    """The issues' accuracy bars against the record: issue 13 (held out, per framework; memory;
    the 2021-22 tables), issue 14 (serving held out) and issue 19 (held-out Blackwell rows)."""
    held = [r for r in rows if row_set(r) == "modern" and r["split"] == "held_out"]
    held_time = [r for r in held if r["kind"] == "time"]
    out = ["| issue | bar | rows | now | met |", "| --- | --- | --- | --- | --- |"]

    def mean_max(issue, what, mine, mean_below, max_below):
        st = Stats(mine)
        met = st.mean < mean_below and st.max < max_below
        out.append(f"| {issue} | {what}: mean \\|error\\| < {mean_below:.0%}, max < {max_below:.0%} | {st.n} "
                   f"| {pct(st.mean)}, {pct(st.max)} | {'yes' if met else 'no'} |")

    for fw in sorted({r["framework"] for r in held_time}):
        mean_max(13, f"held-out step time or throughput, framework {fw}",
                 [r for r in held_time if r["framework"] == fw], 0.08, 0.20)
    ran = out_of_memory(held)
    out.append(f"| 13 | held-out configurations that ran judged out of memory: none | "
               f"{len({r['scenario'] for r in held if r['kind'] != 'memory' or r['metric'] == 'peak_memory_GiB'})} "
               f"| {ran} | {'yes' if ran == 0 else 'no'} |")
    peak = [r for r in held if r["metric"] == "peak_memory_GiB"]
    worst = max((r["abs_error"] for r in peak), default=0.0)
    within = sum(1 for r in peak if r["abs_error"] <= 0.10)
    out.append(f"| 13 | held-out peak memory within 10% where published | {len(peak)} "
               f"| {within} within, max {pct(worst)} | {'yes' if within == len(peak) else 'no'} |")
    old = Stats([r for r in rows if row_set(r) == "" and r["kind"] == "time"])
    out.append(f"| 13 | 2021-22 tables: step time mean \\|error\\| < 5% | {old.n} | {pct(old.mean)} "
               f"| {'yes' if old.mean < 0.05 else 'no'} |")
    mean_max(14, "held-out serving", [r for r in rows if row_set(r) == "serving" and r["split"] == "held_out"],
             0.10, 0.20)
    mean_max(19, "held-out Blackwell (b200, gb200) step time",
             [r for r in held_time if r["chip"] in ("b200", "gb200")], 0.10, 0.20)
    return out


def tables(record):
    rows = record["rows"]
    for r in rows:
        for key in ("kind", "bias", "source", "framework", "chip", "precision"):
            if key not in r:
                sys.exit(f"validation_tables.py: the record's rows lack '{key}': re-record with "
                         "scripts/record_accuracy.sh")
        if (r["kind"] == "memory") != (r["metric"] in MEMORY_METRICS):
            sys.exit(f"validation_tables.py: {r['scenario']} {r['metric']}: kind {r['kind']} "
                     "does not match the metric")
    time_rows = [r for r in rows if r["kind"] == "time"]
    return {
        "summary": summary(rows),
        "bars": bars(rows),
        "development": grouped([r for r in time_rows if r["split"] == "development"
                                and row_set(r) in ("modern", "realexec")]),
        "held_out": grouped([r for r in time_rows if r["split"] == "held_out" and row_set(r) == "modern"]),
    }


def fill(doc, made, path):
    """The doc with each marked block replaced by its table."""
    lines = doc.split("\n")
    out, i, seen = [], 0, set()
    while i < len(lines):
        out.append(lines[i])
        name = next((n for n in made if lines[i].strip() == BEGIN.format(n)), None)
        i += 1
        if name is None:
            continue
        end = next((j for j in range(i, len(lines)) if lines[j].strip() == END), None)
        if end is None:
            sys.exit(f"{path}: the block '{name}' has no '{END}' line")
        out.extend(made[name])
        out.append(lines[end])
        seen.add(name)
        i = end + 1
    missing = sorted(set(made) - seen)
    if missing:
        sys.exit(f"{path}: no marker line for {', '.join(missing)} ({BEGIN.format(missing[0])})")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--record", default=os.path.join(ROOT, "examples/validation/accuracy.json"))
    ap.add_argument("--doc", default=os.path.join(ROOT, "docs/validation.md"))
    mode = ap.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help="put the tables into the doc")
    mode.add_argument("--check", action="store_true", help="exit 1 unless the doc holds them")
    args = ap.parse_args()
    with open(args.record) as f:
        made = tables(json.load(f))
    if not args.write and not args.check:
        for name, lines in made.items():
            print(f"{name}:\n" + "\n".join(lines) + "\n")
        return 0
    with open(args.doc) as f:
        doc = f.read()
    new = fill(doc, made, args.doc)
    if args.check:
        if new != doc:
            print(f"{args.doc}: its tables are not what {args.record} gives; run "
                  "python3 scripts/validation_tables.py --write", file=sys.stderr)
            return 1
        return 0
    if new != doc:
        tmp = args.doc + ".tmp"
        with open(tmp, "w") as f:
            f.write(new)
        os.replace(tmp, args.doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())
