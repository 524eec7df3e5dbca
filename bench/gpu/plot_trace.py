#!/usr/bin/env python3
"""Draws a libbbmm trace (Chrome/Perfetto JSON, BBMM_TRACE=file.json) as a PNG timeline.

    python3 bench/gpu/plot_trace.py trace.json -o trace.png
    python3 bench/gpu/plot_trace.py trace.json -o step.png --step 9
    python3 bench/gpu/plot_trace.py trace.json -o win.png --from-us 12000 --to-us 15000

The trace (bbmm-runtime/src/core/trace.cpp) holds "ph":"X" slices with tid 0 for the
host and tid d+1 for device d, named "kernel", "copy H2D", "copy D2H", "copy peer",
"copy D2D", "free", "evict" (and, on the host track, "issue ..." slices: the time the
calling thread spent issuing an operation); their args may carry "stream" (compute, h2d, d2h, peer,
mem), "array", "box", "bytes". One row per (device, stream), or per device when no
slice has a stream; slices coloured by kind; time axis in ms from the trace's origin;
each row labelled with its busy share of the window. --step N shows the N-th kernel
(0-based) of device 0 with the kernels before and after it. Also prints the rows and
their busy shares. A docs tool: needs matplotlib (python3-matplotlib), not a library
dependency.
"""
import argparse
import json
import os
import sys

KINDS = [  # (kind, colour)
    ("kernel", "#2e7d32"),
    ("copy H2D", "#1565c0"),
    ("copy D2H", "#c62828"),
    ("copy peer", "#6a1b9a"),
    ("copy D2D", "#ef6c00"),
    ("copy (other)", "#8d6e63"),
    ("free", "#9e9e9e"),
    ("evict", "#000000"),
    ("issue (host)", "#90caf9"),
    ("other", "#f9a825"),
]
COLOUR = dict(KINDS)
STREAM_ORDER = ["compute", "h2d", "d2h", "peer", "mem"]


def kind_of(name):
    n = name.strip().replace("copy batch ", "copy ")
    low = n.lower()
    if low.startswith("issue"):
        return "issue (host)"
    if low.startswith("kernel"):
        return "kernel"
    for k in ("copy H2D", "copy D2H", "copy peer", "copy D2D"):
        if n.startswith(k) or low.startswith(k.lower()):
            return k
    if low.startswith("copy"):
        return "copy (other)"
    if low.startswith("free"):
        return "free"
    if low.startswith("evict"):
        return "evict"
    return "other"


def load(path):
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    events = data.get("traceEvents", []) if isinstance(data, dict) else data
    names, slices = {}, []
    for e in events:
        if not isinstance(e, dict):
            continue
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[e.get("tid", 0)] = e.get("args", {}).get("name", "")
        elif e.get("ph") == "X":
            args = e.get("args") or {}
            slices.append({
                "tid": int(e.get("tid", 0)),
                "ts": float(e.get("ts", 0)),
                "dur": max(0.0, float(e.get("dur", 0))),
                "name": str(e.get("name", "")),
                "kind": kind_of(str(e.get("name", ""))),
                "stream": args.get("stream"),
            })
    return names, slices


def row_label(tid, names):
    if tid in names and names[tid]:
        return names[tid]
    return "host" if tid == 0 else "device %d" % (tid - 1)


def busy_us(intervals, lo, hi):
    """Length of the union of `intervals` clipped to [lo, hi]."""
    total, end = 0.0, lo
    for a, b in sorted(intervals):
        a, b = max(a, end), min(b, hi)
        if b > a:
            total += b - a
            end = b
    return total


def window(slices, args):
    if not slices:
        print("plot_trace: the trace has no slices")
        return 0.0, 1.0, "empty trace"
    t_lo = min(s["ts"] for s in slices)
    t_hi = max(s["ts"] + s["dur"] for s in slices)
    if args.step is not None:
        kernels = sorted((s for s in slices if s["tid"] == 1 and s["kind"] == "kernel"),
                         key=lambda s: s["ts"])
        if not kernels:
            print("plot_trace: no kernel slices on device 0; showing the whole trace")
            return t_lo, t_hi, "whole trace (no kernels on device 0)"
        if not 0 <= args.step < len(kernels):
            sys.exit("plot_trace: --step %d: device 0 has kernels 0..%d" %
                     (args.step, len(kernels) - 1))
        first = kernels[max(0, args.step - 1)]
        last = kernels[min(len(kernels) - 1, args.step + 1)]
        lo, hi = first["ts"], last["ts"] + last["dur"]
        pad = args.pad_us if args.pad_us is not None else 0.05 * max(hi - lo, 1.0)
        return lo - pad, hi + pad, "kernel %d of device 0 and its neighbours" % args.step
    lo = args.from_us if args.from_us is not None else t_lo
    hi = args.to_us if args.to_us is not None else t_hi
    if hi <= lo:
        sys.exit("plot_trace: empty window [%g, %g] us" % (lo, hi))
    what = "whole trace" if args.from_us is None and args.to_us is None else "window"
    return lo, hi, what


def main():
    p = argparse.ArgumentParser(description="Draw a libbbmm Chrome trace as a PNG timeline.")
    p.add_argument("trace", help="trace JSON written by libbbmm (BBMM_TRACE)")
    p.add_argument("-o", "--output", help="PNG to write (default: TRACE with .png)")
    p.add_argument("--from-us", type=float, help="window start, microseconds")
    p.add_argument("--to-us", type=float, help="window end, microseconds")
    p.add_argument("--step", type=int, help="window around the N-th kernel (0-based) of device 0")
    p.add_argument("--pad-us", type=float, help="padding around the --step window (default 5%%)")
    p.add_argument("--title", help="plot title (default: the file name and window)")
    p.add_argument("--width", type=float, default=16.0, help="figure width, inches")
    args = p.parse_args()
    if args.step is not None and (args.from_us is not None or args.to_us is not None):
        p.error("--step and --from-us/--to-us exclude each other")
    out = args.output or os.path.splitext(args.trace)[0] + ".png"

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.patches import Patch
    except ImportError:
        sys.exit("plot_trace: needs matplotlib (apt-get install python3-matplotlib)")

    try:
        names, slices = load(args.trace)
    except (OSError, ValueError) as e:
        sys.exit("plot_trace: cannot read %s: %s" % (args.trace, e))
    lo, hi, what = window(slices, args)
    shown = [s for s in slices if s["ts"] + s["dur"] >= lo and s["ts"] <= hi]

    with_stream = any(s["stream"] for s in slices)
    def row_key(s):
        return (s["tid"], (s["stream"] or "-") if with_stream else "")
    keys = sorted({row_key(s) for s in slices},
                  key=lambda k: (k[0], STREAM_ORDER.index(k[1]) if k[1] in STREAM_ORDER
                                 else len(STREAM_ORDER), k[1]))
    rows = {k: i for i, k in enumerate(keys)}

    width_us = hi - lo
    min_w = width_us * 0.002  # zero-length slices (evictions) stay visible
    fig_h = 1.6 + 0.45 * max(len(keys), 1)
    fig, ax = plt.subplots(figsize=(args.width, fig_h))
    labels, kinds_seen = [], set()
    print("plot_trace: %s: %d slices, %d in the window [%.1f, %.1f] us (%s)" %
          (args.trace, len(slices), len(shown), lo, hi, what))
    for k in keys:
        i = rows[k]
        mine = [s for s in shown if row_key(s) == k]
        busy = busy_us([(s["ts"], s["ts"] + s["dur"]) for s in mine if s["kind"] != "evict"],
                       lo, hi)
        share = 100.0 * busy / width_us if width_us > 0 else 0.0
        label = row_label(k[0], names)
        if with_stream and k[0] != 0:
            label += " / " + (k[1] if k[1] != "-" else "other")
        labels.append("%s (%.0f%% busy)" % (label, share))
        print("  %-28s %5d slices, busy %5.1f%%" % (label, len(mine), share))
        for kind, colour in KINDS:
            bars = [((max(s["ts"], lo) - lo) / 1e3,
                     max(min(s["ts"] + s["dur"], hi) - max(s["ts"], lo), min_w) / 1e3)
                    for s in mine if s["kind"] == kind]
            if bars:
                kinds_seen.add(kind)
                ax.broken_barh(bars, (i - 0.4, 0.8), facecolors=colour,
                               edgecolors="none" if kind != "evict" else colour)
    ax.set_ylim(max(len(keys), 1) - 0.5, -0.5)
    ax.set_yticks(range(len(keys)))
    ax.set_yticklabels(labels)
    ax.set_xlim(0, width_us / 1e3)
    ax.set_xlabel("time (ms) from %.3f ms after the trace origin" % (lo / 1e3))
    ax.grid(axis="x", alpha=0.3)
    title = args.title or os.path.basename(args.trace)
    ax.set_title("%s (%s, %.3f ms)" % (title, what, width_us / 1e3))
    if kinds_seen:
        ax.legend(handles=[Patch(color=c, label=k) for k, c in KINDS if k in kinds_seen],
                  loc="upper center", bbox_to_anchor=(0.5, -0.18 if len(keys) < 4 else -0.08),
                  ncol=len(kinds_seen), frameon=False)
    else:
        ax.text(0.5, 0.5, "no slices in this window", transform=ax.transAxes, ha="center")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print("plot_trace: wrote %s" % out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
