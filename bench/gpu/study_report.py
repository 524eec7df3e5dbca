#!/usr/bin/env python3
"""The multi-GPU study's parser and report (bench/gpu/study.sh).

    study_report.py parse --sample S --config C --gpus G --args A --rc RC [--trace T] < output
        one STUDY line from a bbmmc sample's output (its timing line, its verdict and the
        BBMM_STATS=json statistics) and, with --trace, the time breakdown of its trace
    study_report.py report study_results.txt --out DIR
        the tables (markdown, on stdout) and DIR/study_{scaling,breakdown,baselines}.png

STUDY line fields: sample, config (strong, data:WORK (the work relative to the strong
size), trace, staged), gpus, args (commas),
rc, verdict (PASSED, FAILED or none), seconds (the generated function, runtime creation
excluded by the sample's warm-up), seq_seconds, manager_seconds (time inside libbbmm, all
devices), pin_seconds (page-locking the host arrays, inside the timed part), peak_d<k>
(peak device bytes allocated), bytes_h2d/d2h/peer/d2d, evictions, tiles; with a trace,
bd_* (seconds): window, compute, h2d, d2h, peer, d2d (unions over the devices' streams,
averaged over the devices), idle (no device activity, averaged), host_lib (union of the
host thread's libbbmm slices), pin (register/unregister host slices).

The time breakdown shares add up to more than the window where copies run under kernels.
A docs tool: the report's plots need matplotlib (python3-matplotlib); the parser needs
nothing but Python 3.
"""
import argparse
import gzip
import json
import re
import sys


def union_length(intervals):
    total, end = 0.0, None
    start = None
    for a, b in sorted(intervals):
        if end is None or a > end:
            if end is not None:
                total += end - start
            start, end = a, b
        elif b > end:
            end = b
    if end is not None:
        total += end - start
    return total


def kind_of(name):
    n = name.replace("copy batch ", "copy ")
    if n.startswith("kernel"):
        return "compute"
    for key, kind in (("copy H2D", "h2d"), ("copy D2H", "d2h"), ("copy peer", "peer"),
                      ("copy D2D", "d2d")):
        if n.startswith(key):
            return kind
    return "other"


def trace_spans(path):
    """The complete slices ("ph": "X") of a libbbmm trace (BBMM_TRACE), .json or .json.gz."""
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    return [e for e in events if e.get("ph") == "X" and "dur" in e]


def breakdown(path):
    spans = trace_spans(path)
    if not spans:
        return {}
    lo = min(e["ts"] for e in spans)
    hi = max(e["ts"] + e["dur"] for e in spans)
    window = (hi - lo) * 1e-6
    devices = sorted({e["tid"] for e in spans if e.get("tid", 0) > 0})
    kinds = ("compute", "h2d", "d2h", "peer", "d2d")
    per = {k: 0.0 for k in kinds}
    idle = 0.0
    computes = []  # each device's compute time: is one GPU slower than the others?
    for d in devices:
        mine = [e for e in spans if e.get("tid") == d]
        for k in kinds:
            t = union_length([(e["ts"], e["ts"] + e["dur"]) for e in mine
                              if kind_of(e["name"]) == k]) * 1e-6
            per[k] += t
            if k == "compute":
                computes.append(t)
        busy = union_length([(e["ts"], e["ts"] + e["dur"]) for e in mine]) * 1e-6
        idle += window - busy
    n = max(len(devices), 1)
    host = [e for e in spans if e.get("tid", 0) == 0]
    host_lib = union_length([(e["ts"], e["ts"] + e["dur"]) for e in host]) * 1e-6
    pin = sum(e["dur"] for e in host if "register host" in e["name"]) * 1e-6
    # The run proper: from the first tile's acquire to the end of the last device
    # operation other than a free (the last write-back), i.e. without pinning,
    # reservations and unpinning (what the baselines time).
    acquires = [e["ts"] for e in host if e["name"] == "acquire"]
    work_end = [e["ts"] + e["dur"] for e in spans if e.get("tid", 0) > 0 and e["name"] != "free"]
    out = {"window": window, "idle": idle / n, "host_lib": host_lib, "pin": pin}
    if computes:
        out["compute_min"], out["compute_max"] = min(computes), max(computes)
    if acquires and work_end:
        out["run"] = (max(work_end) - min(acquires)) * 1e-6
        # When the host thread had issued every tile (the end of its last tile
        # call): far before the run's end, libbbmm's host time is not what the
        # GPUs wait for. And when the last GPU started its first kernel.
        calls = [e["ts"] + e["dur"] for e in host
                 if e["name"] in ("acquire", "launch", "flow_out", "release")]
        out["host_done"] = (max(calls) - min(acquires)) * 1e-6
        firsts = [min((e["ts"] for e in spans if e.get("tid") == d and kind_of(e["name"]) == "compute"),
                      default=None) for d in devices]
        firsts = [f for f in firsts if f is not None]
        if firsts:
            out["last_start"] = (max(firsts) - min(acquires)) * 1e-6
    for k in kinds:
        out[k] = per[k] / n
    return out


def parse(args):
    text = sys.stdin.read()
    f = {"sample": args.sample, "config": args.config, "gpus": args.gpus,
         "args": args.args.replace(" ", ","), "rc": args.rc}
    m = re.search(r"verification against the sequential program: ([A-Z]+)", text)
    f["verdict"] = m.group(1) if m else "none"
    m = re.search(r": sequential ([0-9.]+) s, bbmmc ([0-9.]+) s", text)
    if m:
        f["seq_seconds"], f["seconds"] = m.group(1), m.group(2)
    stats = None
    for line in text.splitlines():
        if line.startswith('{"backend"'):
            try:
                stats = json.loads(line)
            except ValueError:
                pass
    if stats:
        t = stats["total"]
        f["manager_seconds"] = "%.6f" % t.get("manager_seconds", 0)
        f["pin_seconds"] = "%.6f" % t.get("host_pin_seconds", 0)
        f["unpin_seconds"] = "%.6f" % t.get("host_unpin_seconds", 0)
        f["reserve_seconds"] = "%.6f" % t.get("reserve_seconds", 0)
        for k in ("bytes_h2d", "bytes_d2h", "bytes_peer", "bytes_d2d", "evictions", "tiles",
                  "kernels", "bytes_host_pinned"):
            f[k] = t.get(k, 0)
        for i, d in enumerate(stats.get("devices", [])):
            f["peak_d%d" % i] = d.get("peak_bytes_allocated", 0)
    if args.trace:
        try:
            for k, v in breakdown(args.trace).items():
                f["bd_" + k] = "%.6f" % v
            # When the CUDA issue workers issued what the GPUs ran (issue_report.py; absent
            # from traces without taken_us/issued_us).
            import issue_report  # noqa: E402 (beside this file; it imports this module)
            a = issue_report.analyse(args.trace)
            for k in ("not_issued", "blocked"):
                if a[k] == a[k]:
                    f["is_" + k] = "%.6f" % a[k]
        except (OSError, ValueError, KeyError) as e:
            f["bd_error"] = type(e).__name__
    print("STUDY " + " ".join("%s=%s" % (k, v) for k, v in f.items()))


def read_results(path):
    rows, base, machine = [], [], {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            parts = line.split()
            if not parts:
                continue
            kv = dict(p.split("=", 1) for p in parts[1:] if "=" in p)
            if parts[0] == "STUDY":
                rows.append(kv)
            elif parts[0] == "BASELINE":
                base.append(kv)
            elif parts[0] == "STUDY_MACHINE":
                machine = kv
    return rows, base, machine


def num(kv, key):
    try:
        return float(kv[key])
    except (KeyError, ValueError):
        return None


def run_seconds(kv):
    """The generated function's seconds less its setup (pinning the host arrays,
    allocating the reserved instances: both before the first tile), which the baselines
    keep out of their timed part too; None when unknown. Unpinning at the end stays in
    (it overlaps the last write-backs); the traced runs give the run exactly (bd_run)."""
    t = num(kv, "seconds") if kv else None
    if t is None:
        return None
    return t - sum(num(kv, k) or 0 for k in ("pin_seconds", "reserve_seconds"))


def ratio(x, y):
    """x / y, None when either is unknown or zero."""
    return x / y if x and y else None


def lib_share(kv, run):
    """libbbmm's time on the host thread in run kv (manager_seconds less the
    reservations, which are setup) as a percentage of `run` seconds; None if unknown."""
    if not kv or not run or num(kv, "manager_seconds") is None:
        return None
    return 100 * (num(kv, "manager_seconds") - (num(kv, "reserve_seconds") or 0)) / run


def traced_shares(kv):
    """The run seconds of traced run kv, and as percentages of the run: the GPUs' idle time,
    the idle time with the next kernel not issued yet and the issue workers' time waiting
    for one another (None where the trace has no issue times)."""
    run = num(kv, "bd_run") or num(kv, "bd_window")
    busy = num(kv, "bd_window") - num(kv, "bd_idle")
    idle = 100 * max(run - busy, 0.0) / run if run else None
    issue = lambda k: 100 * num(kv, "is_" + k) if ("is_" + k) in kv else None
    return run, idle, issue("not_issued"), issue("blocked")


def fmt(x, spec="%.3f"):
    return "-" if x is None else spec % x


# Strong-scaling targets per GPU count (issues 12, 15, 16).
STENCILS = ("heat2d", "fdtd2d", "heat3d", "jacobi1d")
TARGETS = {2: dict({s: 1.95 for s in STENCILS}, floyd=1.8, lu=1.7),
           4: dict({s: 3.7 for s in STENCILS}, floyd=3.5, lu=3.0),
           8: {s: 7.0 for s in STENCILS}}


def report(args):
    rows, base, machine = read_results(args.results)
    find = lambda s, c, g: next((r for r in rows if r["sample"] == s and r["config"].split(":")[0] == c
                                 and r["gpus"] == str(g) and "seconds" in r), None)
    def traced_row(s, g, config="trace"):
        return next((x for x in rows if x["sample"] == s and x["config"] == config
                     and x["gpus"] == str(g) and "bd_window" in x), None)
    def traced(s, g, config="trace"):
        r = traced_row(s, g, config)
        return num(r, "bd_run") if r else None

    samples = []
    for r in rows:
        if r["sample"] not in samples:
            samples.append(r["sample"])
    # GPU counts of the strong-scaling runs (or of the long ones, when only those ran).
    counts = sorted({int(r["gpus"]) for r in rows if r["config"] in ("strong", "long")})
    multi = [g for g in counts if g > 1]
    most = counts[-1] if counts else 1
    out = []
    w = out.append
    def table(header):
        w("| " + " | ".join(header) + " |")
        w("|" + "---|" * len(header))
    w("## Multi-GPU study (bench/gpu/study.sh), %s, %s x %s" %
      (machine.get("date", "?"), machine.get("gpus", "?"), machine.get("gpu_name", "?")))
    w("")
    w("function s: the generated function (runtime creation excluded by a warm-up call; "
      "pinning the host arrays, reservations and unpinning included); traced run: from the "
      "first tile's acquire to the end of the last write-back, in a second run with "
      "BBMM_TRACE (what the baselines time: they pin, allocate, free and unpin outside their "
      "timed part); libbbmm: manager_seconds less reserve_seconds of the untraced run, over "
      "the traced run. Every run is verified against the sequential program (its cached "
      "result for the same command line).")
    w("")
    def scaling_table(config, trace_config, title):
        """The strong-scaling table of runs `config` (traced: `trace_config`); returns
        [(sample, {G: (function speed-up, run speed-up)})]."""
        w("### %s, 1 -> %s GPUs" % (title, " -> ".join(str(g) for g in multi)))
        w("")
        w("Function seconds and traced-run seconds on 1, %s GPUs; speed-ups of the traced run "
          "(of the function in parentheses) against 1 GPU." % ", ".join(str(g) for g in multi))
        w("")
        table(["sample", "size"] + ["function %d GPU s" % g for g in counts]
              + ["run %d GPU s" % g for g in counts]
              + ["speed-up 1 -> %d (target)" % g for g in multi]
              + ["verified", "libbbmm %% of the run (%d GPUs)" % most])
        got = []
        for s in samples:
            a = find(s, config, 1)
            if not a:
                continue
            runs = {g: find(s, config, g) for g in counts}
            t = {g: num(runs[g], "seconds") if runs[g] else None for g in counts}
            r = {g: traced(s, g, trace_config) for g in counts}
            cells = [s, a["args"].replace(",", " ")]
            cells += [fmt(t[g], "%.4f") for g in counts] + [fmt(r[g], "%.4f") for g in counts]
            ups = {}
            for g in multi:
                ups[g] = (ratio(t[1], t[g]), ratio(r[1], r[g]))
                target = TARGETS.get(g, {}).get(s)
                cells.append("%s (%s)%s" % (fmt(ups[g][1], "%.2fx"), fmt(ups[g][0], "%.2fx"),
                                            " (>= %.2fx)" % target if target else ""))
            cells.append("/".join(runs[g]["verdict"] for g in counts if runs[g]))
            most_run = runs[most]
            cells.append(fmt(lib_share(most_run, r[most] or run_seconds(most_run))
                             if most_run else None, "%.1f"))
            w("| " + " | ".join(cells) + " |")
            got.append((s, ups))
        w("")
        return got

    scal = scaling_table("strong", "trace", "Strong scaling")
    if any(r["config"] == "long" for r in rows):
        scaling_table("long", "trace:long", "Strong scaling with 4 times the steps (long runs)")
    w("### Data scaling (the data doubles with the GPU count: half the strong work on 1 GPU, "
      "the strong size on 2, twice it on 4; efficiency = t(1 GPU) x work ratio / G / t(G "
      "GPUs); run efficiency: the same less pinning and reservations; target >= 0.97)")
    w("")
    table(["sample", "size on 1 GPU", "1 GPU s"]
          + sum([["size on %d" % g, "%d GPUs s" % g, "efficiency", "run efficiency"]
                 for g in multi], []) + ["verified"])
    for s in samples:
        b1 = next((r for r in rows if r["sample"] == s and r["config"].startswith("data:")
                   and r["gpus"] == "1" and "seconds" in r), None)
        if not b1:
            continue
        w1 = float(b1["config"].split(":")[1])
        cells = [s, b1["args"].replace(",", " "), fmt(num(b1, "seconds"), "%.4f")]
        ver = [b1["verdict"]]
        for g in multi:
            d = find(s, "strong", g) if g == 2 else next(
                (r for r in rows if r["sample"] == s and r["config"].startswith("data:")
                 and r["gpus"] == str(g) and "seconds" in r), None)
            if not d:
                cells += ["-"] * 4
                continue
            wg = 1.0 if d["config"] == "strong" else float(d["config"].split(":")[1])
            scale = wg / w1 / g
            t1, tg = num(b1, "seconds"), num(d, "seconds")
            r1, rg = run_seconds(b1), run_seconds(d)
            cells += [d["args"].replace(",", " "), fmt(tg, "%.4f"),
                      fmt(ratio(t1 * scale if t1 else None, tg), "%.2f"),
                      fmt(ratio(r1 * scale if r1 else None, rg), "%.2f")]
            ver.append(d["verdict"])
        cells.append("/".join(ver))
        w("| " + " | ".join(cells) + " |")
    w("")
    w("### Time breakdown (traced run: from the first acquire to the last write-back; "
      "each GPU's busy time per kind of operation, averaged over the GPUs, as shares of the "
      "run; copies overlap kernels, so the shares add to more than 100%)")
    w("")
    table(["sample", "GPUs", "run s", "compute", "read-in H2D", "write-back D2H", "flow-out peer",
           "D2D", "idle", "libbbmm on the host thread (stats, reservations excluded)",
           "host thread done (last tile call)", "last GPU's first kernel",
           "idle with the next kernel not issued yet (of the kernels' span)",
           "issue workers waiting for other workers",
           "compute per GPU / (1 GPU's / G): mean, slowest GPU",
           "slowest / fastest GPU's compute"])
    bds = []
    for s, cfg, label in [(x, c, x + l) for c, l in (("trace", ""), ("trace:long", " (long)"))
                          for x in samples]:
        for g in counts:
            r = traced_row(s, g, cfg)
            if not r:
                continue
            run, idle, not_issued, blocked = traced_shares(r)
            sh = lambda k: 100 * num(r, "bd_" + k) / run if run else None
            lib = lib_share(find(s, "long" if cfg == "trace:long" else "strong", g), run)
            one = traced_row(s, 1, cfg)
            per_gpu = num(one, "bd_compute") / g if one and num(one, "bd_compute") else None
            infl = "%s, %s" % (fmt(ratio(num(r, "bd_compute"), per_gpu), "%.3f"),
                               fmt(ratio(num(r, "bd_compute_max"), per_gpu), "%.3f"))
            spread = fmt(ratio(num(r, "bd_compute_max"), num(r, "bd_compute_min")), "%.3f")
            w("| %s | %d | %.4f | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                label, g, run, fmt(sh("compute"), "%.1f%%"), fmt(sh("h2d"), "%.1f%%"),
                fmt(sh("d2h"), "%.1f%%"), fmt(sh("peer"), "%.1f%%"), fmt(sh("d2d"), "%.1f%%"),
                fmt(idle, "%.1f%%"), fmt(lib, "%.1f%%"), fmt(sh("host_done"), "%.1f%%"),
                fmt(sh("last_start"), "%.1f%%"), fmt(not_issued, "%.1f%%"),
                fmt(blocked, "%.1f%%"), infl, spread))
            if g == most and cfg == "trace":
                shares = {k: sh(k) for k in ("compute", "h2d", "d2h", "peer", "d2d")}
                shares["idle"] = idle
                bds.append((s, shares))
    w("")
    # Variants (section variants): each variant's traced long runs against the default's.
    variants = []
    for r in rows:
        c = r["config"]
        if c.startswith("variant:") and c[len("variant:"):] not in variants:
            variants.append(c[len("variant:"):])
    if variants:
        w("### Variants (traced long runs, the same call: run seconds, default / variant "
          "(> 1: the variant is faster), GPU idle, idle with the next kernel not issued yet, "
          "issue workers waiting for one another; verified)")
        w("")
        header = ["sample", "GPUs", "default run s"]
        for v in variants:
            header += ["%s run s" % v, "default / %s" % v, "%s idle" % v, "%s not issued" % v,
                       "%s workers waiting" % v, "%s verified" % v]
        table(header)
        for s in samples:
            for g in counts:
                base_run = traced(s, g, "trace:long")
                cells = [s, str(g), fmt(base_run, "%.4f")]
                any_variant = False
                for v in variants:
                    r = traced_row(s, g, "variant:" + v)
                    if not r:
                        cells += ["-"] * 6
                        continue
                    any_variant = True
                    run, idle, not_issued, blocked = traced_shares(r)
                    cells += [fmt(run, "%.4f"), fmt(ratio(base_run, run), "%.2f"),
                              fmt(idle, "%.1f%%"), fmt(not_issued, "%.1f%%"),
                              fmt(blocked, "%.1f%%"), r.get("verdict", "-")]
                if any_variant:
                    w("| " + " | ".join(cells) + " |")
        w("")
    w("### Allocation per GPU (%d GPUs, strong size): peak bytes allocated vs the GPU's even "
      "share of the arrays" % most)
    w("")
    table(["sample"] + ["GPU %d peak MB" % i for i in range(most)]
          + ["arrays' bytes / %d (MB)" % most, "max peak / share"])
    for s in samples:
        b = find(s, "strong", most)
        if not b or "peak_d0" not in b:
            continue
        share = num(b, "bytes_host_pinned") / most if num(b, "bytes_host_pinned") else None
        peaks = [num(b, "peak_d%d" % i) for i in range(most)]
        top = max(p or 0 for p in peaks)
        w("| " + " | ".join([s] + [fmt(p / 1e6 if p is not None else None, "%.1f") for p in peaks]
                            + [fmt(share / 1e6 if share else None, "%.1f"),
                               fmt(top / share if share else None, "%.2f")]) + " |")
    w("")
    w("### Peer flow-out vs flow-out staged through the host (BBMM_PEER_ACCESS=0), %d GPUs" % most)
    w("")
    table(["sample", "peer run s", "staged run s", "staged / peer", "verified"])
    for s in samples:
        b = find(s, "strong", most)
        st = find(s, "staged", most)
        if not b or not st:
            continue
        tp, ts = run_seconds(b), run_seconds(st)
        w("| %s | %s | %s | %s | %s |" % (s, fmt(tp, "%.4f"), fmt(ts, "%.4f"),
                                           fmt(ratio(ts, tp), "%.2f"), st["verdict"]))
    w("")
    w("### Baselines (bench/gpu/baselines/baseline_stencils; same per-element expressions, -fmad=false like the bbmmc build)")
    w("")
    w("Times exclude setup and teardown: the baselines pin, allocate, free and unpin outside "
      "their timed part; bbmm: the traced run (first acquire to the last write-back) where "
      "there is one, else run seconds (above). bbmm vs hand-written = hand-written s / "
      "bbmm s (target >= 0.95); unified memory / bbmm (target >= 2). bbmm pinned: the "
      "traced run with the host arrays pinned at registration (BBMM_CUDA_HOST_COPIES=pinned), "
      "before the run, as the baselines pin before their timer (the default stages the "
      "copies through pinned buffers inside the run and pins nothing).")
    w("")
    table(["sample", "GPUs", "bbmm s", "hand-written s", "bbmm speed / hand-written",
           "bbmm pinned s", "bbmm pinned speed / hand-written",
           "unified memory s", "UM / bbmm", "whole-array copies s (1 GPU)", "verified (baselines)"])
    bars = []
    for s in ("heat2d", "heat3d"):
        for g in counts:
            b = find(s, "strong", g)
            if not b:
                continue
            tb = traced(s, g) or run_seconds(b)
            pick = lambda impl: next((x for x in base if x.get("sample") == s and x.get("impl") == impl
                                      and x.get("gpus") == str(g)), None)
            hw, um, wc = pick("handwritten"), pick("managed"), pick("wholecopy")
            th = num(hw, "seconds") if hw else None
            tu = num(um, "seconds") if um else None
            tw = num(wc, "seconds") if wc else None
            ver = " ".join("%s:%s/%s" % (x["impl"], x.get("verified", "?"), x.get("oracle", "?"))
                           for x in (hw, um, wc) if x)
            tp = traced(s, g, "trace:pinned")
            pinned_row = traced_row(s, g, "trace:pinned")
            if pinned_row:
                ver += " bbmm-pinned:%s" % pinned_row.get("verdict", "?")
            w("| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                s, g, fmt(tb, "%.4f"), fmt(th, "%.4f"), fmt(ratio(th, tb), "%.2f"),
                fmt(tp, "%.4f"), fmt(ratio(th, tp), "%.2f"),
                fmt(tu, "%.4f"), fmt(ratio(tu, tb), "%.2f"), fmt(tw, "%.4f"), ver))
            bars.append(("%s %d GPU%s" % (s, g, "s" if g > 1 else ""), tb, tp, th, tu, tw))
    print("\n".join(out))
    plots(args.out, scal, multi, bds, most, bars, machine)


def plots(outdir, scal, multi, bds, most, bars, machine):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("\n(matplotlib not available: no plots)")
        return
    title = "%s x %s, %s" % (machine.get("gpus", "?"), machine.get("gpu_name", "?"),
                             machine.get("date", "?"))
    if scal and multi:
        fig, ax = plt.subplots(figsize=(10, 4))
        xs = range(len(scal))
        width = 0.8 / len(multi)
        for i, g in enumerate(multi):
            ax.bar([x - 0.4 + width * (i + 0.5) for x in xs], [s[1][g][1] or 0 for s in scal],
                   width, label="1 -> %d GPUs (traced run)" % g)
            ax.scatter([x - 0.4 + width * (i + 0.5) for x in xs], [s[1][g][0] or 0 for s in scal],
                       marker="_", color="black", s=60,
                       label="whole function (pinning in)" if i == 0 else None)
            ax.axhline(g, color="grey", linestyle="--", linewidth=0.8)
        ax.set_xticks(list(xs))
        ax.set_xticklabels([s[0] for s in scal])
        ax.set_ylabel("speed-up over 1 GPU")
        ax.set_title("bbmmc samples, strong scaling, " + title)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(outdir + "/study_scaling.png", dpi=110)
    if bds:
        fig, ax = plt.subplots(figsize=(9, 4))
        kinds = [("compute", "#2e7d32"), ("h2d", "#1565c0"), ("d2h", "#c62828"),
                 ("peer", "#6a1b9a"), ("d2d", "#ef6c00"), ("idle", "#bdbdbd")]
        xs = list(range(len(bds)))
        width = 0.8 / len(kinds)
        for i, (k, c) in enumerate(kinds):
            ax.bar([x - 0.4 + width * (i + 0.5) for x in xs], [b[1][k] or 0 for b in bds], width,
                   color=c, label=k)
        ax.set_xticks(xs)
        ax.set_xticklabels([b[0] for b in bds])
        ax.set_ylabel("% of the traced run (per GPU)")
        ax.set_title("time breakdown on %d GPUs, " % most + title)
        ax.legend(fontsize=8, ncol=3)
        fig.tight_layout()
        fig.savefig(outdir + "/study_breakdown.png", dpi=110)
    if bars:
        fig, ax = plt.subplots(figsize=(9, 4))
        labels = ["bbmm (default: copies staged)", "bbmm (arrays pinned before the run)",
                  "hand-written", "unified memory", "whole-array copies"]
        colours = ["#2e7d32", "#81c784", "#1565c0", "#c62828", "#9e9e9e"]
        xs = list(range(len(bars)))
        for i in range(5):
            ax.bar([x - 0.4 + 0.16 * (i + 0.5) for x in xs], [b[i + 1] or 0 for b in bars], 0.16,
                   color=colours[i], label=labels[i])
        ax.set_xticks(xs)
        ax.set_xticklabels([b[0] for b in bars])
        ax.set_ylabel("seconds (setup and teardown excluded)")
        ax.set_title("bbmm vs baselines, " + title)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(outdir + "/study_baselines.png", dpi=110)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("parse")
    p.add_argument("--sample", required=True)
    p.add_argument("--config", required=True)
    p.add_argument("--gpus", required=True)
    p.add_argument("--args", required=True)
    p.add_argument("--rc", required=True)
    p.add_argument("--trace")
    r = sub.add_parser("report")
    r.add_argument("results")
    r.add_argument("--out", default=".")
    a = ap.parse_args()
    parse(a) if a.cmd == "parse" else report(a)


if __name__ == "__main__":
    main()
