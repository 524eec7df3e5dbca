#!/usr/bin/env python3
"""When did the CUDA issue workers issue what the GPUs ran? From libbbmm traces (BBMM_TRACE,
.json or .json.gz) of the CUDA backend, whose device slices carry "taken_us" (the worker
took the command from its queue) and "issued_us" (it had waited for what the command waits
on and issued it), both on the trace's clock:

    python3 bench/gpu/issue_report.py TRACE...

One table row per trace: the run (study_report.py's: first acquire to the last write-back),
and, averaged over the devices,
  idle         time between a device's kernels, as a share of its kernels' span;
  not issued   the part of that idle during which the next kernel was not issued yet (the
               GPU waited for its worker, not for a copy or another GPU);
  blocked      the share of each worker's span spent waiting for other devices' workers to
               issue what its commands wait for (CudaOpEvent::wait_issued);
  lead         the median time from a kernel's issue to its start (how far ahead of the GPU
               its worker was).
"-" where the trace has no taken_us/issued_us (libbbmm before 2026-11-26's fifth session).
"""
import math
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import study_report as sr  # noqa: E402


def analyse(path):
    """The row's numbers for one trace (a dict; shares in [0, 1], lead in microseconds)."""
    spans = sr.trace_spans(path)
    out = {"run": sr.breakdown(path).get("run", float("nan"))}
    devices = sorted({e["tid"] for e in spans if e.get("tid", 0) > 0})
    idle = not_issued = blocked = 0.0
    kernel_span = worker_span = 0.0
    leads = []
    for d in devices:
        kernels = sorted((e for e in spans if e.get("tid") == d and e["name"] == "kernel"),
                         key=lambda e: e["ts"])
        if kernels:
            kernel_span += kernels[-1]["ts"] + kernels[-1]["dur"] - kernels[0]["ts"]
        for prev, k in zip(kernels, kernels[1:]):
            end = prev["ts"] + prev["dur"]
            gap = k["ts"] - end
            if gap <= 0:
                continue
            idle += gap
            issued = k.get("args", {}).get("issued_us")
            if issued is not None and issued > end:
                not_issued += min(gap, issued - end)
        for k in kernels:
            issued = k.get("args", {}).get("issued_us")
            if issued is not None:
                leads.append(k["ts"] - issued)
        ops = [e for e in spans if e.get("tid") == d and "taken_us" in e.get("args", {})]
        if ops:
            worker_span += (max(e["args"]["issued_us"] for e in ops) -
                            min(e["args"]["taken_us"] for e in ops))
            blocked += sum(e["args"]["issued_us"] - e["args"]["taken_us"] for e in ops)
    out["idle"] = idle / kernel_span if kernel_span > 0 else float("nan")
    out["not_issued"] = not_issued / kernel_span if kernel_span > 0 and leads else float("nan")
    out["blocked"] = blocked / worker_span if worker_span > 0 else float("nan")
    out["lead_us"] = statistics.median(leads) if leads else float("nan")
    return out


def main(argv):
    if not argv:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    print("| trace | run s | idle | not issued | workers blocked | issue lead (median) |")
    print("|---|---|---|---|---|---|")
    for path in argv:
        a = analyse(path)
        def share(v):
            return "-" if math.isnan(v) else "%.1f%%" % (100 * v)
        lead = "-" if math.isnan(a["lead_us"]) else "%.0f us" % a["lead_us"]
        print("| %s | %.4f | %s | %s | %s | %s |" %
              (os.path.basename(path), a["run"], share(a["idle"]), share(a["not_issued"]),
               share(a["blocked"]), lead))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
