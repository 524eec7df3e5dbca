#!/usr/bin/env python3
"""Plots the table of staging_threads.sh: function seconds per sample and GPU count,
one bar per setting (staged with T copier threads, pinned with registration).

    python3 bench/gpu/plot_staging_threads.py OUT.png TITLE staging_threads.txt

Needs matplotlib (Debian's python3-matplotlib; a docs tool, not a dependency).
"""
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def parse(path):
    rows = []
    for line in open(path):
        m = re.match(r"\| (\w+) \| (\d+) \| ([^|]+) \| ([0-9.]+) \| (\w+) \|", line)
        if m:
            rows.append((m.group(1), int(m.group(2)), m.group(3).strip(), float(m.group(4))))
    return rows


def main():
    out, title, path = sys.argv[1:4]
    rows = parse(path)
    groups = sorted({(r[0], r[1]) for r in rows}, key=lambda g: (g[0], g[1]))
    settings = []
    for r in rows:
        if r[2] not in settings:
            settings.append(r[2])
    width = 0.8 / len(settings)
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for k, s in enumerate(settings):
        xs, ys = [], []
        for i, g in enumerate(groups):
            v = [r[3] for r in rows if (r[0], r[1]) == g and r[2] == s]
            if v:
                xs.append(i + (k - (len(settings) - 1) / 2) * width)
                ys.append(v[0])
        ax.bar(xs, ys, width, label=s)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels([f"{g[0]}\n{g[1]} GPU{'s' if g[1] > 1 else ''}" for g in groups])
    ax.set_ylabel("function seconds (registration included)")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()
