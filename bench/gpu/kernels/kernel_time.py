#!/usr/bin/env python3
"""Kernel time per step of a bbmmc-compiled sample, from its libbbmm trace (issue 11).

    BBMM_TRACE=t.json BBMM_SAMPLE_REFERENCE=0 BBMM_DEVICES=1 ./heat2d_bbmmc_cuda 32768 20
    python3 bench/gpu/kernels/kernel_time.py t.json heat2d 32768 20

SAMPLE SIZES... are the sample's own arguments: heat2d N STEPS, fdtd2d NX NY TMAX,
heat3d N STEPS, jacobi1d N STEPS, gemm NI NJ NK, bscholes N (gemm and bscholes have no
time loop: their step is the whole loop nest). Another sample takes --steps S and
reports no bytes (or --bytes-per-step B).

The trace (bbmm-runtime/src/core/trace.cpp, BBMM_TRACE=file.json) holds "ph":"X" slices
in microseconds, tid 0 the host, tid d+1 device d; a kernel is a slice named "kernel..."
on a device track (on the CUDA backend timed by CUDA events around the launch on the
compute stream). Per device: the busy time of its kernel slices (the union of their
intervals, so overlapping slices count once). When every device has a multiple of STEPS
kernels, the first step's kernels (the warm-up: module loading, first touch) are left
out and the time is divided by STEPS - 1, like handwritten_kernels leaves out its first
step; otherwise all kernels over STEPS. Devices run concurrently: the per-step time is
the largest device's. The trace's 1 us resolution is fine for the millisecond steps of
the sizes in README.md.

Prints '#' lines per device and one line in handwritten_kernels' format:
  KERNEL sample=heat2d impl=bbmmc n=32768 steps=20 seconds_per_step=.. bytes_per_step=..
         flops_per_step=.. gbps=.. verified=0|1 timed_steps=.. kernels_per_step=..
         devices=.. busy_share=..
bytes_per_step is the same compulsory traffic as handwritten_kernels' (each element a
phase reads counted once plus each element it writes, 8 bytes; no reuse between phases),
flops_per_step the same count of the C source's operations (see handwritten.cu; its
--plan mode prints both, and the test compares them). busy_share: kernel time over the
span from the first timed kernel's start to the last one's end (launch gaps lower it).
verified is what --verified says (the sample's own check, done at small sizes
elsewhere). Exit status: 0, or 1 when the trace cannot be read or has no kernels.
"""
import argparse
import json
import sys

DOUBLE = 8.0


def heat2d(n, steps):
    m = n - 2.0
    return 2 * DOUBLE * ((n * n - 4) + m * m), 2 * 5 * m * m, steps


def fdtd2d(nx, ny, tmax):
    x, y = float(nx), float(ny)
    p1 = 1 + y
    p2 = (x - 1) * y + x * y + (x - 1) * y
    p3 = x * (y - 1) + x * y + x * (y - 1)
    p4 = 2 * (x - 1) * (y - 1) + (x - 1) * y + x * (y - 1)
    flops = 3 * (x - 1) * y + 3 * x * (y - 1) + 5 * (x - 1) * (y - 1)
    return DOUBLE * (p1 + p2 + p3 + p4), flops, tmax


def heat3d(n, steps):
    m = n - 2.0
    return 2 * DOUBLE * ((m ** 3 + 6 * m * m) + m ** 3), 2 * 15 * m ** 3, steps


def jacobi1d(n, steps):
    return 2 * DOUBLE * (n + (n - 2.0)), 2 * 3 * (n - 2.0), steps


def gemm(ni, nj, nk):
    i, j, k = float(ni), float(nj), float(nk)
    return DOUBLE * (2 * i * j + i * k + k * j), i * j + 3 * i * j * k, 1


def bscholes(n):
    return DOUBLE * 8.0 * n, 41.0 * n, 1


# name: (size names, function returning (bytes, flops, steps))
SAMPLES = {
    "heat2d": (["n", "steps"], heat2d),
    "fdtd2d": (["nx", "ny", "steps"], fdtd2d),
    "heat3d": (["n", "steps"], heat3d),
    "jacobi1d": (["n", "steps"], jacobi1d),
    "gemm": (["ni", "nj", "nk"], gemm),
    "bscholes": (["n"], bscholes),
}


def kernel_slices(path):
    """{device: [(start_us, end_us), ...]} of the kernel slices of the trace at `path`."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    events = data.get("traceEvents", []) if isinstance(data, dict) else data
    out = {}
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "X":
            continue
        tid = int(e.get("tid", 0))
        if tid < 1 or not str(e.get("name", "")).lower().startswith("kernel"):
            continue
        ts = float(e.get("ts", 0))
        dur = max(0.0, float(e.get("dur", 0)))
        out.setdefault(tid - 1, []).append((ts, ts + dur))
    for d in out:
        out[d].sort()
    return out


def busy(intervals):
    """Length of the union of `intervals` (sorted by start)."""
    total, end = 0.0, float("-inf")
    for a, b in intervals:
        a = max(a, end)
        if b > a:
            total += b - a
            end = b
    return total


def per_step(slices, steps):
    """(seconds per step, timed steps, kernels per step or 0, busy share, per-device rows)."""
    counts = [len(v) for v in slices.values()]
    skip = steps >= 2 and all(c % steps == 0 for c in counts)
    timed = steps - 1 if skip else steps
    worst, rows, shares = 0.0, [], []
    for d in sorted(slices):
        ks = slices[d]
        first = len(ks) // steps if skip else 0
        kept = ks[first:]
        b = busy(kept)
        span = (max(e for _, e in kept) - kept[0][0]) if kept else 0.0
        share = b / span if span > 0 else 1.0
        rows.append((d, len(ks), first, b, span, share))
        shares.append(share)
        worst = max(worst, b / timed * 1e-6)
    kps = counts[0] // steps if len(set(counts)) == 1 and counts[0] % steps == 0 else 0
    return worst, timed, kps, min(shares) if shares else 0.0, rows


def main():
    p = argparse.ArgumentParser(
        description="Per-step kernel time of a bbmmc-compiled sample from its BBMM_TRACE.")
    p.add_argument("trace", help="trace JSON written by libbbmm (BBMM_TRACE)")
    p.add_argument("sample", help="heat2d, fdtd2d, heat3d, jacobi1d, gemm, bscholes or another")
    p.add_argument("sizes", nargs="*", type=int, help="the sample's own arguments")
    p.add_argument("--steps", type=int, help="steps (needed for another sample)")
    p.add_argument("--bytes-per-step", type=float, help="override the roofline bytes")
    p.add_argument("--flops-per-step", type=float, help="override the operation count")
    p.add_argument("--verified", type=int, choices=(0, 1), default=0,
                   help="print verified=1 (the caller checked the sample's result)")
    args = p.parse_args()

    fields, nbytes, flops, steps = [], 0.0, 0.0, args.steps
    if args.sample in SAMPLES:
        names, fn = SAMPLES[args.sample]
        if len(args.sizes) != len(names):
            p.error("%s takes %s" % (args.sample, " ".join(x.upper() for x in names)))
        if any(v < 1 for v in args.sizes):
            p.error("sizes must be positive")
        nbytes, flops, steps = fn(*args.sizes)
        fields = ["%s=%d" % (k, v) for k, v in zip(names, args.sizes) if k != "steps"]
        if args.steps is not None:
            p.error("--steps is implied by %s's sizes" % args.sample)
    elif steps is None or steps < 1:
        p.error("unknown sample '%s': give --steps S (>= 1)" % args.sample)
    else:
        fields = ["%s=%d" % ("size%d" % i, v) for i, v in enumerate(args.sizes)]
    if args.bytes_per_step is not None:
        nbytes = args.bytes_per_step
    if args.flops_per_step is not None:
        flops = args.flops_per_step

    try:
        slices = kernel_slices(args.trace)
    except (OSError, ValueError) as e:
        print("kernel_time: cannot read the trace '%s': %s" % (args.trace, e), file=sys.stderr)
        return 1
    if not slices:
        print("kernel_time: no kernel slices on a device track of '%s'" % args.trace,
              file=sys.stderr)
        return 1
    sec, timed, kps, share, rows = per_step(slices, steps)
    for d, n, first, b, span, sh in rows:
        print("# device %d: %d kernels, %s, busy %.6g s over a span of %.6g s (%.1f%%)"
              % (d, n, "the first %d (the warm-up step) left out" % first if first
                 else "none left out", b * 1e-6, span * 1e-6, 100 * sh))
    if sec <= 0:
        print("kernel_time: the kernels have no duration in '%s'" % args.trace, file=sys.stderr)
        return 1
    gbps = nbytes / sec / 1e9 if nbytes else 0.0
    print(" ".join(["KERNEL sample=%s impl=bbmmc" % args.sample] + fields + [
        "steps=%d seconds_per_step=%.6g bytes_per_step=%.6g flops_per_step=%.6g gbps=%.6g "
        "verified=%d timed_steps=%d kernels_per_step=%d devices=%d busy_share=%.4g"
        % (steps, sec, nbytes, flops, gbps, args.verified, timed, kps, len(rows), share)]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
