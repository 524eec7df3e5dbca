#!/usr/bin/env python3
"""Tests of bench/gpu/host_calls.py (ctest e2e.host.calls) on a synthetic trace whose
numbers are worked out by hand below. Exits nonzero on the first failed check."""
import io
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import host_calls as hc  # noqa: E402


def check(cond, what):
    if not cond:
        print("test_host_calls: FAILED: " + what)
        sys.exit(1)


def x(tid, name, ts, dur):
    return {"name": name, "ph": "X", "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": {}}


# Host track (tid 0), 2 tiles: acquire 2 + 4 us, launch 3 + 100 us (the second over the
# 50 us outlier line), an "issue launch" of 1 us inside each launch (a backend call: listed,
# not added), flow_out 6 us once, release 1 + 1 us. Device slices (tid 1) are ignored.
# API calls: 7 (2 acquire, 2 launch, 1 flow_out, 2 release), 2 + 4 + 3 + 100 + 6 + 1 + 1
# = 117 us over 2 tiles = 58.5 us per tile, of which
# 100 us over 50 us; launch: total 103 us, 51.5 per tile, max 100, 100 us over 50 us.
events = [
    x(0, "acquire", 0, 2), x(0, "launch", 3, 3), x(0, "issue launch", 4, 1),
    x(0, "release", 7, 1), x(0, "acquire", 10, 4), x(0, "launch", 15, 100),
    x(0, "issue launch", 20, 1), x(0, "flow_out", 116, 6), x(0, "release", 123, 1),
    x(1, "kernel", 5, 500), x(1, "copy H2D", 0, 50),
]
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "t.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"traceEvents": events}, f)
    calls = hc.host_calls(path)
    check(sorted(calls) == ["acquire", "flow_out", "issue launch", "launch", "release"],
          "host calls by name: %s" % sorted(calls))
    check(sorted(calls["launch"]) == [3.0, 100.0], "launch durations %s" % calls["launch"])
    out = io.StringIO()
    total, tiles = hc.report(path, out)
    check(tiles == 2, "tiles %d" % tiles)
    check(abs(total - 117.0) < 1e-9, "API total %.3f us (issue slices must not count)" % total)
    text = out.getvalue()
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in text.splitlines() if line.startswith("| ") and "---" not in line}
    check(rows["launch"][0] == "2", "launch count %s" % rows["launch"])
    check(rows["launch"][1] == "0.103", "launch total ms %s" % rows["launch"][1])
    check(rows["launch"][2] == "51.50", "launch per tile %s" % rows["launch"][2])
    check(rows["launch"][7] == "100", "launch max %s" % rows["launch"][7])
    check(rows["launch"][8] == "0.100", "launch over 50 us %s" % rows["launch"][8])
    check(rows["API calls"][0] == "7", "API call count %s" % rows["API calls"])
    check(rows["API calls"][2] == "58.50", "API per tile %s" % rows["API calls"])
    check(rows["API calls"][-1] == "0.100", "API over 50 us %s" % rows["API calls"])
    check(rows["issue launch"][1] == "0.002", "issue launch total %s" % rows["issue launch"])
print("test_host_calls: all checks passed")
