#!/usr/bin/env python3
"""Function seconds (the generated function as a user times it) of the strong-scaling
runs of several study results (bench/gpu/study.sh's study_results.txt), side by side per
sample and GPU count:

  python3 bench/gpu/plot_function_times.py OUT.png TITLE LABEL=RESULTS [LABEL=RESULTS ...]

Needs python3-matplotlib (a docs tool, not a dependency of the library)."""
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(path):
    out = {}
    for line in open(path):
        if not line.startswith("STUDY "):
            continue
        kv = dict(x.split("=", 1) for x in line.split()[1:] if "=" in x)
        if kv.get("config") != "strong" or "seconds" not in kv:
            continue
        out[(kv["sample"], int(kv["gpus"]))] = float(kv["seconds"])
    return out


def main(argv):
    if len(argv) < 4:
        sys.exit(__doc__)
    png, title = argv[1], argv[2]
    series = []
    for arg in argv[3:]:
        label, path = arg.split("=", 1)
        series.append((label, load(path)))
    samples = []
    for _, data in series:
        for sample, _ in data:
            if sample not in samples:
                samples.append(sample)
    counts = sorted({g for _, data in series for _, g in data})
    fig, ax = plt.subplots(figsize=(12, 4.5))
    bars = [(label, g) for label, _ in series for g in counts]
    width = 0.8 / len(bars)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, (label, g) in enumerate(bars):
        data = dict(series)[label]
        xs = [k + (i - len(bars) / 2 + 0.5) * width for k in range(len(samples))]
        ys = [data.get((s, g), 0.0) for s in samples]
        hatch = "//" if label != series[-1][0] else None
        ax.bar(xs, ys, width, label=f"{label}, {g} GPU{'s' if g > 1 else ''}",
               color=colours[counts.index(g) % len(colours)], hatch=hatch,
               edgecolor="black", linewidth=0.3)
    ax.set_xticks(range(len(samples)))
    ax.set_xticklabels(samples)
    ax.set_ylabel("function seconds (lower is better)")
    ax.set_title(title)
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(png, dpi=100)


if __name__ == "__main__":
    main(sys.argv)
