#!/usr/bin/env python3
"""When each device of a libbbmm trace (BBMM_TRACE) starts: its first host-to-device copy
and its first kernel, in ms from the first acquire, and the run (first acquire to the
last device operation other than a free).

    python3 bench/gpu/first_starts.py trace.json[.gz] [...]

One line per trace and device. On 4 x H200 (2026-11-26) the devices started one after the
other: each one's first read-in began when the previous one's first kernel had run
(docs/performance.md, "four H200s"); bench/gpu/start_order.sh runs the experiment.
Needs nothing but Python 3.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from study_report import trace_spans  # noqa: E402 (the same folder, staged with it)


def starts(spans):
    """{'run': ms, 'devices': [(device, first H2D ms or None, first kernel ms or None)]}."""
    acquires = [e["ts"] for e in spans if e.get("tid", 0) == 0 and e["name"] == "acquire"]
    if not acquires:
        return None
    t0 = min(acquires)
    dev = [e for e in spans if e.get("tid", 0) > 0]
    end = max((e["ts"] + e["dur"] for e in dev if e["name"] != "free"), default=t0)
    out = []
    for tid in sorted({e["tid"] for e in dev}):
        mine = [e for e in dev if e["tid"] == tid and e["ts"] >= t0]
        h2d = [e["ts"] for e in mine if "H2D" in e["name"]]
        ker = [e["ts"] for e in mine if e["name"] == "kernel"]
        out.append((tid - 1, (min(h2d) - t0) / 1e3 if h2d else None,
                    (min(ker) - t0) / 1e3 if ker else None))
    return {"run": (end - t0) / 1e3, "devices": out}


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip())
        return 2
    for path in sys.argv[1:]:
        try:
            s = starts(trace_spans(path))
        except (OSError, ValueError, KeyError) as e:
            print("%s: cannot read: %s" % (path, e))
            continue
        if s is None:
            print("%s: no acquire in the trace" % path)
            continue
        fmt = lambda x: "-" if x is None else "%.2f" % x
        print("%s: run %.2f ms" % (path, s["run"]))
        for d, h, k in s["devices"]:
            print("  device %d: first read-in %s ms, first kernel %s ms" % (d, fmt(h), fmt(k)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
