#!/usr/bin/env python3
"""Where the calling thread's time in libbbmm goes, call by call, from libbbmm traces
(BBMM_TRACE, .json or .json.gz): the host track's slices (acquire, launch, flow_out,
release, ...; one per API call, timed by the runtime's ManagerTimer) grouped by name.

    python3 bench/gpu/host_calls.py TRACE...

For each trace: per call name the count, the total, the mean, the median, the 90th and
99th percentiles and the longest call, in microseconds, and the share of the total held
by calls over 50 us (the outliers: waits, allocations) against the rest (the steady
per-call cost). "per tile" divides by the number of release calls. The trace's clock
counts whole microseconds, so single short calls read 0 or 1 us; sums over many calls
are unbiased. Slices named "issue ..." are the backend's calls made inside the API
calls (InstrumentedBackend): listed, not added to the API calls' total.
"""
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import study_report as sr  # noqa: E402

OUTLIER_US = 50


def host_calls(path):
    """{name: [durations in us]} of the host track's slices (tid 0)."""
    calls = {}
    for e in sr.trace_spans(path):
        if e.get("tid", 0) != 0:
            continue
        calls.setdefault(e["name"], []).append(float(e["dur"]))
    return calls


def percentile(sorted_values, q):
    if not sorted_values:
        return float("nan")
    k = min(len(sorted_values) - 1, max(0, int(round(q * (len(sorted_values) - 1)))))
    return sorted_values[k]


def report(path, out=sys.stdout):
    calls = host_calls(path)
    tiles = len(calls.get("release", [])) or 1
    out.write("\n### %s (%d tiles)\n\n" % (os.path.basename(path), tiles))
    out.write("| call | count | total ms | per tile us | mean us | median | p90 | p99 | max | "
              "over %d us: ms |\n|---|---|---|---|---|---|---|---|---|---|\n" % OUTLIER_US)
    grand = grand_out = 0.0
    for name in sorted(calls, key=lambda n: -sum(calls[n])):
        d = sorted(calls[name])
        total = sum(d)
        slow = sum(x for x in d if x > OUTLIER_US)
        if not name.startswith("issue "):  # backend calls inside the API calls
            grand += total
            grand_out += slow
        out.write("| %s | %d | %.3f | %.2f | %.2f | %.0f | %.0f | %.0f | %.0f | %.3f |\n" %
                  (name, len(d), total / 1e3, total / tiles, statistics.mean(d),
                   percentile(d, 0.5), percentile(d, 0.9), percentile(d, 0.99), d[-1],
                   slow / 1e3))
    out.write("| API calls | %d | %.3f | %.2f | | | | | | %.3f |\n" %
              (sum(len(v) for n, v in calls.items() if not n.startswith("issue ")),
               grand / 1e3, grand / tiles, grand_out / 1e3))
    return grand, tiles


def main(argv):
    if not argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    for path in argv:
        report(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
