#!/usr/bin/env python3
"""Tests of bench/gpu/study_report.py and first_starts.py (ctest e2e.study.report): the union
of intervals, the time breakdown of a synthetic trace (numbers worked out by hand below), the
STUDY line of a sample's output (and issue_report.py's shares from a trace), the report's
run-time rules (traced run preferred, setup subtracted) and each device's first read-in and
kernel. Exits nonzero on the first failed check."""
import io
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import study_report as sr  # noqa: E402


def check(cond, what):
    if not cond:
        print("test_study_report: FAILED: " + what)
        sys.exit(1)


def close(a, b):
    return abs(a - b) < 1e-12


# Union of intervals: overlapping, touching, nested and apart.
check(close(sr.union_length([(0, 10), (5, 15), (20, 30), (22, 25), (30, 31)]), 26),
      "union_length")
check(sr.union_length([]) == 0, "union_length of nothing")

# A trace (microseconds): the host registers (pins) 0-50, acquires at 100; device 0 (tid 1)
# reads in 50-150 (H2D), computes 100-200, writes back 200-260 (D2H), frees 300-310;
# device 1 (tid 2) computes 120-180 and sends a peer copy 180-190.
trace = {"traceEvents": [
    {"ph": "M", "name": "thread_name", "tid": 0, "args": {"name": "host"}},
    {"ph": "X", "name": "issue register host", "tid": 0, "ts": 0, "dur": 50},
    {"ph": "X", "name": "acquire", "tid": 0, "ts": 100, "dur": 5},
    {"ph": "X", "name": "copy H2D", "tid": 1, "ts": 50, "dur": 100},
    {"ph": "X", "name": "kernel", "tid": 1, "ts": 100, "dur": 100},
    {"ph": "X", "name": "copy batch D2H", "tid": 1, "ts": 200, "dur": 60},
    {"ph": "X", "name": "free", "tid": 1, "ts": 300, "dur": 10},
    {"ph": "X", "name": "kernel", "tid": 2, "ts": 120, "dur": 60},
    {"ph": "X", "name": "copy peer", "tid": 2, "ts": 180, "dur": 10},
]}
with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
    json.dump(trace, f)
    path = f.name
bd = sr.breakdown(path)
os.unlink(path)
check(close(bd["window"], 310e-6), "window: first event to last end")
check(close(bd["run"], 160e-6), "run: first acquire (100) to the last non-free op (260)")
check(close(bd["compute"], (100 + 60) / 2 * 1e-6), "compute: averaged over the 2 devices")
check(close(bd["compute_min"], 60e-6) and close(bd["compute_max"], 100e-6),
      "compute of the fastest and the slowest device")
check(close(bd["h2d"], 100 / 2 * 1e-6) and close(bd["d2h"], 60 / 2 * 1e-6), "h2d, d2h")
check(close(bd["peer"], 10 / 2 * 1e-6), "peer")
# Idle: device 0 busy 50-260 and 300-310 (220 of 310), device 1 busy 120-190 (70 of 310).
check(close(bd["idle"], ((310 - 220) + (310 - 70)) / 2 * 1e-6), "idle")
check(close(bd["host_lib"], 55e-6) and close(bd["pin"], 50e-6), "host thread, pinning")

# The STUDY line of a sample's output.
out = ("heat2d: n=8192 steps=100\n  A 1 doubles, max relative error 0\n"
       "heat2d: sequential 0.000070 s, bbmmc 0.207667 s\n"
       "heat2d: verification against the sequential program: PASSED\n"
       '{"backend":"cuda","devices":[{"peak_bytes_allocated":5},{"peak_bytes_allocated":7}],'
       '"total":{"manager_seconds":0.25,"host_pin_seconds":0.08,"reserve_seconds":0.01,'
       '"host_unpin_seconds":0.03,"bytes_h2d":11,"tiles":4}}\n')
p = subprocess.run([sys.executable, os.path.join(HERE, "study_report.py"), "parse", "--sample",
                    "heat2d", "--config", "strong", "--gpus", "2", "--args", "8192 100", "--rc",
                    "0"], input=out, capture_output=True, text=True, check=True)
line = p.stdout.strip()
kv = dict(x.split("=", 1) for x in line.split()[1:])
check(line.startswith("STUDY "), "a STUDY line")
check(kv["verdict"] == "PASSED" and kv["seconds"] == "0.207667" and kv["args"] == "8192,100",
      "verdict, seconds, args")
check(kv["peak_d0"] == "5" and kv["peak_d1"] == "7" and kv["tiles"] == "4", "per-device peaks")
# With a trace whose kernels carry the issue workers' times, the STUDY line has
# issue_report.py's shares (2 kernels on device 0, the second issued 20 us after the
# first ended: 20 of its 30 us gap over the kernels' span 0..130; each worker blocked 5 of
# its span: 10 over the span -10..70).
issue_trace = {"traceEvents": [
    {"ph": "X", "name": "acquire", "tid": 0, "ts": 0, "dur": 1},
    {"ph": "X", "name": "kernel", "tid": 1, "ts": 0, "dur": 50, "args": {"taken_us": -10, "issued_us": -5}},
    {"ph": "X", "name": "kernel", "tid": 1, "ts": 80, "dur": 50, "args": {"taken_us": 65, "issued_us": 70}},
]}
with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
    json.dump(issue_trace, f)
    ipath = f.name
p2 = subprocess.run([sys.executable, os.path.join(HERE, "study_report.py"), "parse", "--sample",
                     "heat2d", "--config", "trace", "--gpus", "1", "--args", "8", "--rc", "0",
                     "--trace", ipath], input="", capture_output=True, text=True, check=True)
os.unlink(ipath)
kv2 = dict(x.split("=", 1) for x in p2.stdout.strip().split()[1:])
check(abs(float(kv2["is_not_issued"]) - 20 / 130) < 1e-6 and
      abs(float(kv2["is_blocked"]) - 10 / 80) < 1e-6,
      "issue shares in the STUDY line: %r" % kv2)
# Run seconds: less pinning and reservations (not unpinning, which overlaps the write-backs).
check(close(sr.run_seconds(kv), 0.207667 - 0.08 - 0.01), "run_seconds")
# first_starts.py: each device's first read-in and first kernel from the first acquire (us
# in the trace, ms out); a free does not end the run.
import first_starts as fs  # noqa: E402
spans = [
    {"ph": "X", "name": "acquire", "tid": 0, "ts": 1000, "dur": 5},
    {"ph": "X", "name": "copy batch H2D", "tid": 1, "ts": 1100, "dur": 300},
    {"ph": "X", "name": "kernel", "tid": 1, "ts": 1500, "dur": 100},
    {"ph": "X", "name": "copy H2D", "tid": 2, "ts": 1200, "dur": 1300},
    {"ph": "X", "name": "kernel", "tid": 2, "ts": 2600, "dur": 400},
    {"ph": "X", "name": "free", "tid": 2, "ts": 4000, "dur": 10},
]
st = fs.starts(spans)
check(close(st["run"], 2.0), "first_starts: run from the first acquire to the last non-free end")
check(st["devices"][0][0] == 0 and close(st["devices"][0][1], 0.1) and close(st["devices"][0][2], 0.5),
      "first_starts: device 0")
check(close(st["devices"][1][1], 0.2) and close(st["devices"][1][2], 1.6), "first_starts: device 1")
check(fs.starts([e for e in spans if e["name"] != "acquire"]) is None, "first_starts: no acquire")
# The report's baselines table (bbmm pinned beside the hand-written code), from a real
# results file (2 x H200, nineteenth session): its bbmm-pinned column must be the traced
# run (bd_run) of the trace:pinned rows, and its ratio the hand-written seconds over it,
# both read here straight from the raw lines.
results = os.path.join(HERE, "results", "2026-11-28-h200x2-s19run4-study_results.txt")
raw_rows, raw_base, _ = sr.read_results(results)
with tempfile.TemporaryDirectory() as d:
    env = dict(os.environ, MPLBACKEND="Agg")
    text = subprocess.run([sys.executable, os.path.join(HERE, "study_report.py"), "report",
                           results, "--out", d], capture_output=True, text=True, env=env,
                          check=True).stdout
table = text[text.index("### Baselines"):]
cells = {}
for line in table.splitlines():
    c = [x.strip() for x in line.split("|")[1:-1]]
    if len(c) >= 7 and c[0] in ("heat2d", "heat3d"):
        cells[(c[0], int(c[1]))] = c
checked = 0
for r in raw_rows:
    if r["config"] != "trace:pinned":
        continue
    g = int(r["gpus"])
    hw = next(b for b in raw_base if b["sample"] == r["sample"] and b["impl"] == "handwritten"
              and int(b["gpus"]) == g)
    row = cells[(r["sample"], g)]
    check(row[5] == "%.4f" % float(r["bd_run"]),
          "%s %d GPUs: bbmm pinned %s, its trace says %s" % (r["sample"], g, row[5], r["bd_run"]))
    check(row[6] == "%.2f" % (float(hw["seconds"]) / float(r["bd_run"])),
          "%s %d GPUs: pinned / hand-written %s" % (r["sample"], g, row[6]))
    check("bbmm-pinned:PASSED" in row[-1], "%s %d GPUs: the pinned run's verdict" % (r["sample"], g))
    checked += 1
check(checked == 4, "4 pinned runs in the results file (%d)" % checked)
print("test_study_report: all checks passed")
