#!/usr/bin/env python3
"""Plots the work balance of bench/polybench/run.sh tables: per kernel, the busiest of 4
devices' statement instances over a fair share ("balance 4dev (statement instances)"),
one bar per table, with the 1.3 target of issue 13. A docs tool (python3-matplotlib).

  plot_balance.py OUT.png LABEL=TABLE.md [LABEL=TABLE.md ...]

TABLE.md: run.sh --markdown output (its table lines are read; others are ignored).
"""
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def balances(path):
    """kernel -> balance (float) of one run.sh Markdown table; kernels without one skipped."""
    out, col = {}, None
    for line in open(path, encoding="utf-8"):
        if not line.startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if cells[0] == "kernel":
            col = cells.index("balance 4dev (statement instances)")
            continue
        if col is None or cells[0].startswith("---") or len(cells) <= col:
            continue
        value = cells[col].split(" ")[0].lstrip("X")
        try:
            out[cells[0]] = float(value)
        except ValueError:
            pass
    return out


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    runs = [(arg.split("=", 1)[0], balances(arg.split("=", 1)[1])) for arg in sys.argv[2:]]
    kernels = [k for k in runs[-1][1] if any(k in r for _, r in runs)]
    kernels.sort(key=lambda k: -max(r.get(k, 0) for _, r in runs))
    width = 0.8 / len(runs)
    fig, ax = plt.subplots(figsize=(12, 4.5))
    for n, (label, r) in enumerate(runs):
        xs = [i + (n - (len(runs) - 1) / 2) * width for i in range(len(kernels))]
        ax.bar(xs, [r.get(k, 0) for k in kernels], width, label=label)
    ax.axhline(1.3, color="black", linestyle="--", linewidth=1, label="target 1.3")
    ax.axhline(1.0, color="gray", linewidth=0.5)
    ax.set_xticks(range(len(kernels)))
    ax.set_xticklabels(kernels, rotation=60, ha="right")
    ax.set_ylabel("busiest of 4 devices / fair share\n(statement instances)")
    ax.set_title("PolyBench/C 4.2.1, MINI, 4 host devices: work balance")
    ax.legend()
    fig.tight_layout()
    fig.savefig(sys.argv[1], dpi=110)


if __name__ == "__main__":
    main()
