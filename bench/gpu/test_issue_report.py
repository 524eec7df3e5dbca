#!/usr/bin/env python3
"""Tests of bench/gpu/issue_report.py (ctest e2e.issue.report) on a synthetic trace whose
numbers are worked out by hand below. Exits nonzero on the first failed check."""
import json
import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import issue_report as ir  # noqa: E402


def check(cond, what):
    if not cond:
        print("test_issue_report: FAILED: " + what)
        sys.exit(1)


def close(a, b):
    return abs(a - b) < 1e-9


def x(tid, name, ts, dur, **args):
    return {"name": name, "ph": "X", "pid": 1, "tid": tid, "ts": ts, "dur": dur, "args": args}


# Device 1 (tid 2): kernels [100, 200), [230, 330), [400, 500): span 400 us, idle 30 + 70.
# The second kernel was issued at 150 (before the first ended: the gap is not the worker's);
# the third at 380, 50 us after the second ended: 50 of its 70 us gap is "not issued".
# Worker: taken/issued 90/95, 140/150, 300/380 -> blocked 5 + 10 + 80 = 95 over the span
# 90..380 = 290. Leads: 100-95, 230-150, 400-380 -> 5, 80, 20: median 20.
# Device 0 (tid 1): one kernel [100, 400), no gap; taken/issued 50/60: blocked 10 over 10.
# Averages: idle 100 / (400 + 300) ; not issued 50 / 700; blocked (95 + 10) / (290 + 10);
# leads 5, 80, 20, 40 -> median (20 + 40) / 2 = 30.
events = [
    x(0, "acquire", 10, 5),
    x(1, "kernel", 100, 300, taken_us=50, issued_us=60),
    x(2, "kernel", 100, 100, taken_us=90, issued_us=95),
    x(2, "kernel", 230, 100, taken_us=140, issued_us=150),
    x(2, "kernel", 400, 100, taken_us=300, issued_us=380),
    x(2, "copy D2H", 500, 20),
]
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "t.json")
    with open(path, "w") as f:
        json.dump({"traceEvents": events}, f)
    a = ir.analyse(path)
    check(close(a["run"], (520 - 10) * 1e-6), "run %r" % a["run"])
    check(close(a["idle"], 100 / 700), "idle %r" % a["idle"])
    check(close(a["not_issued"], 50 / 700), "not issued %r" % a["not_issued"])
    check(close(a["blocked"], 105 / 300), "blocked %r" % a["blocked"])
    check(close(a["lead_us"], 30), "lead %r" % a["lead_us"])
    check(ir.main([path]) == 0, "main")
    # Without taken_us/issued_us (older traces): no issue figures.
    for e in events:
        e["args"].pop("taken_us", None)
        e["args"].pop("issued_us", None)
    with open(path, "w") as f:
        json.dump({"traceEvents": events}, f)
    b = ir.analyse(path)
    check(close(b["idle"], 100 / 700), "idle without issue times %r" % b["idle"])
    check(b["not_issued"] != b["not_issued"], "not issued without issue times %r" % b["not_issued"])
    check(b["blocked"] != b["blocked"], "blocked without issue times %r" % b["blocked"])
print("test_issue_report: all checks passed")
