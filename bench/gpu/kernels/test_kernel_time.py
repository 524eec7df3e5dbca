#!/usr/bin/env python3
"""Tests of kernel_time.py (stdlib unittest; no GPU):

    python3 bench/gpu/kernels/test_kernel_time.py [HANDWRITTEN_KERNELS]

Synthetic traces with known kernel intervals pin down the per-step time (warm-up step
left out, overlapping slices counted once, the slowest device of several, non-kernel and
host slices ignored). With the path of handwritten_kernels (or $HANDWRITTEN_KERNELS), its
--plan lines must give the same bytes and operations per step as kernel_time.py's
formulas for every sample at several sizes (the two copies of the roofline rules).
"""
import atexit
import json
import os
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import kernel_time  # noqa: E402

HANDWRITTEN = os.environ.get("HANDWRITTEN_KERNELS", "")
if __name__ == "__main__" and len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
    HANDWRITTEN = sys.argv.pop(1)


def write_trace(slices):
    """A trace file like trace.cpp's with `slices` = [(tid, name, ts_us, dur_us), ...]."""
    events = [{"name": "thread_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "host"}}]
    for tid, name, ts, dur in slices:
        events.append({"name": name, "cat": "bbmm", "ph": "X", "pid": 1, "tid": tid, "ts": ts,
                       "dur": dur, "args": {"stream": "compute"}})
    f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    json.dump({"traceEvents": events}, f)
    f.close()
    atexit.register(os.remove, f.name)
    return f.name


def run_tool(*args):
    here = os.path.dirname(os.path.abspath(__file__))
    p = subprocess.run([sys.executable, os.path.join(here, "kernel_time.py")] + list(args),
                       capture_output=True, text=True)
    fields = {}
    for line in p.stdout.splitlines():
        if line.startswith("KERNEL "):
            fields = dict(x.split("=", 1) for x in line.split()[1:] if "=" in x)
    return p.returncode, fields, p.stdout + p.stderr


class PerStep(unittest.TestCase):
    def test_warmup_step_left_out(self):
        # 3 steps of 2 kernels; the first step is slow (warm-up).
        t = write_trace([(1, "kernel", 0, 500), (1, "kernel", 600, 500),
                         (1, "kernel", 2000, 100), (1, "kernel", 2100, 100),
                         (1, "kernel", 3000, 100), (1, "kernel", 3200, 100),
                         (0, "issue launch", 0, 50), (1, "copy H2D", 10, 9999)])
        rc, f, out = run_tool(t, "heat2d", "100", "3")
        self.assertEqual(rc, 0, out)
        self.assertAlmostEqual(float(f["seconds_per_step"]), 200e-6, places=12)
        self.assertEqual(f["timed_steps"], "2")
        self.assertEqual(f["kernels_per_step"], "2")
        self.assertAlmostEqual(float(f["busy_share"]), 400 / 1300, places=3)

    def test_not_a_multiple_keeps_all(self):
        t = write_trace([(1, "kernel", 0, 300), (1, "kernel", 400, 100), (1, "kernel", 600, 200)])
        rc, f, out = run_tool(t, "jacobi1d", "1000", "2")
        self.assertEqual(rc, 0, out)
        self.assertAlmostEqual(float(f["seconds_per_step"]), 600e-6 / 2, places=12)
        self.assertEqual(f["timed_steps"], "2")

    def test_overlap_counts_once_and_slowest_device(self):
        # Device 0: two overlapping kernels per step (union 150 us); device 1: 100 us.
        t = write_trace([(1, "kernel", 0, 100), (1, "kernel", 50, 100),
                         (1, "kernel", 1000, 100), (1, "kernel", 1050, 100),
                         (2, "kernel", 0, 100), (2, "kernel", 200, 1),
                         (2, "kernel", 1000, 99), (2, "kernel", 1200, 1)])
        rc, f, out = run_tool(t, "heat3d", "10", "2")
        self.assertEqual(rc, 0, out)
        self.assertAlmostEqual(float(f["seconds_per_step"]), 150e-6, places=12)
        self.assertEqual(f["devices"], "2")

    def test_whole_nest_step(self):
        t = write_trace([(1, "kernel", 10, 1000)])
        rc, f, out = run_tool(t, "gemm", "10", "20", "30")
        self.assertEqual(rc, 0, out)
        self.assertAlmostEqual(float(f["seconds_per_step"]), 1e-3, places=12)
        self.assertEqual((f["ni"], f["nj"], f["nk"], f["steps"]), ("10", "20", "30", "1"))
        nbytes = 8.0 * (2 * 10 * 20 + 10 * 30 + 30 * 20)
        self.assertAlmostEqual(float(f["bytes_per_step"]), nbytes)
        self.assertAlmostEqual(float(f["gbps"]), nbytes / 1e-3 / 1e9, places=6)

    def test_no_kernels_fails(self):
        t = write_trace([(0, "kernel", 0, 100), (1, "copy H2D", 0, 100)])
        rc, _, _ = run_tool(t, "heat2d", "10", "2")
        self.assertEqual(rc, 1)

    def test_bad_sizes_fail(self):
        t = write_trace([(1, "kernel", 0, 100)])
        self.assertNotEqual(run_tool(t, "heat2d", "10")[0], 0)
        self.assertNotEqual(run_tool(t, "lu", "10")[0], 0)  # another sample needs --steps
        self.assertEqual(run_tool(t, "lu", "10", "--steps", "1")[0], 0)


@unittest.skipUnless(HANDWRITTEN, "set HANDWRITTEN_KERNELS or pass its path")
class SameRooflineAsHandwritten(unittest.TestCase):
    CASES = [("heat2d", [3, 1]), ("heat2d", [32768, 20]), ("heat3d", [5, 2]),
             ("heat3d", [1024, 20]), ("jacobi1d", [7, 3]), ("jacobi1d", [1073741824, 20]),
             ("fdtd2d", [2, 3, 4]), ("fdtd2d", [24576, 12288, 20]), ("gemm", [3, 5, 7]),
             ("gemm", [12288, 12288, 12288]), ("bscholes", [1]), ("bscholes", [268435456])]

    def test_plan_matches_formulas(self):
        for sample, sizes in self.CASES:
            out = subprocess.run([HANDWRITTEN, sample] + [str(s) for s in sizes] + ["--plan"],
                                 capture_output=True, text=True, check=True).stdout
            plan = dict(x.split("=", 1) for x in out.split()[1:] if "=" in x)
            nbytes, flops, steps = kernel_time.SAMPLES[sample][1](*sizes)
            with self.subTest(sample=sample, sizes=sizes):
                self.assertAlmostEqual(float(plan["bytes_per_step"]) / nbytes, 1.0, places=5)
                self.assertAlmostEqual(float(plan["flops_per_step"]) / flops, 1.0, places=5)
                self.assertEqual(int(plan["steps"]), steps)


if __name__ == "__main__":
    unittest.main()
