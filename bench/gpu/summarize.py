#!/usr/bin/env python3
"""Summarises bench/gpu/run_all.sh's results.txt as Markdown tables (printed last by
run_all.sh and saved as summary.md).

    python3 bench/gpu/summarize.py OUT/results.txt > summary.md

results.txt holds, per step, one tab-separated line
    RUN <name> <subset> <rc|skip> <wall s> <estimate s> <note>
followed by the lines the step printed that start with RESULT (stencil samples),
CEILING or CEILING_CONCURRENT (bench/gpu/ceilings), made of key=value fields, and, after
a step of a bbmmc sample (samples/<name>, <name>_bbmmc_cuda), one line
    SAMPLE sample=<name> config=<config> verdict=PASSED|FAILED|none evictions=<n>|-
written by run_all.sh from the sample's output.

Tables: every step (rc, time, verified); the ceilings; the stencil performance runs
(perf and trace subsets) with the speed-up over the same run on 1 GPU, the roofline
ratio measured / ideal, where
    ideal = bytes_device / (gpus * dev_bw) + bytes_h2d_min / (gpus * h2d_bw)
          + bytes_d2h_min / (gpus * d2h_bw)
with the ceilings of GPUs 0..gpus-1 (mean) measured in the same call, and the time in
the manager as a share of the run; the problems (failed steps, unverified
results, reserve runs whose instances grew, bbmmc samples not PASSED or box-out runs
without evictions); last, the bbmmc samples: sample x configuration -> PASSED/FAILED
(the evictions of the box-out runs). Standard library only.
"""
import sys


def fields(line):
    """key=value tokens of a RESULT/CEILING line, numbers converted where possible."""
    out = {}
    for tok in line.split()[1:]:
        if "=" not in tok:
            continue
        k, v = tok.split("=", 1)
        try:
            out[k] = int(v)
        except ValueError:
            try:
                out[k] = float(v)
            except ValueError:
                out[k] = v
    return out


def parse(path):
    runs = []  # dicts: name subset rc wall est note results ceilings
    with open(path, encoding="utf-8", errors="replace") as f:
        for raw in f:
            line = raw.rstrip("\n")
            if line.startswith("RUN\t"):
                parts = line.split("\t")
                parts += [""] * (7 - len(parts))
                runs.append({"name": parts[1], "subset": parts[2], "rc": parts[3],
                             "wall": parts[4], "est": parts[5], "note": parts[6],
                             "results": [], "ceilings": [], "concurrent": [], "samples": []})
            elif not runs:
                continue
            elif line.startswith("RESULT "):
                runs[-1]["results"].append(fields(line))
            elif line.startswith("CEILING "):
                runs[-1]["ceilings"].append(fields(line))
            elif line.startswith("CEILING_CONCURRENT "):
                runs[-1]["concurrent"].append(fields(line))
            elif line.startswith("SAMPLE "):
                runs[-1]["samples"].append(fields(line))
    return runs


def gb(x):
    return "-" if x is None else "%.1f" % (x / 1e9)


def fmt(x, spec="%.3f"):
    return "-" if x is None else spec % x


# Column headers of the samples table, by configuration (run_all.sh's names).
SAMPLE_CONFIGS = {
    "1gpu_1t": "1 GPU, 1 tile",
    "1gpu_4t": "1 GPU, 4 tiles (march 3)",
    "2gpu_1t": "2 GPUs, 1 tile each",
    "2gpu_4t": "2 GPUs, 4 tiles each",
    "4gpu_1t": "4 GPUs, 1 tile each",
    "4gpu_4t": "4 GPUs, 4 tiles each",
    "2logical_1t": "2 logical devices of GPU 0, 1 tile each",
    "2logical_4t": "2 logical devices of GPU 0, 4 tiles each",
    "boxout": "box-out, 1 GPU, 8 tiles, grids of <= 3 blocks per dimension (evictions)",
    "memcheck": "memcheck",
    "racecheck": "racecheck",
}


def sample_cell(run, s):
    """The samples table's cell of bbmmc sample step `run` and its SAMPLE line `s`."""
    rc, verdict = run["rc"], s.get("verdict")
    if rc == "skip":
        return "skipped"
    if rc in ("124", "137"):
        return "TIMEOUT"
    if verdict == "PASSED" and rc == "0":
        cell = "PASSED"
        if s.get("config") == "boxout":
            ev = s.get("evictions")
            cell += " (%s)" % ev if isinstance(ev, int) and ev > 0 else " (NO evictions)"
        return cell
    if verdict == "PASSED":  # sanitizer errors, or a failure after the verification
        return "FAILED (rc=%s after PASSED)" % rc
    if verdict == "FAILED":
        return "FAILED"
    return "FAILED (rc=%s, no verdict)" % rc


def sample_problems(runs):
    """Problems of the bbmmc sample steps that the step-level checks do not report."""
    problems = []
    for r in runs:
        for s in r["samples"]:
            if r["rc"] == "0" and s.get("verdict") != "PASSED":
                problems.append("%s: exit 0 but no 'verification against the sequential "
                                "program: PASSED' line (verdict %s)" % (r["name"],
                                                                       s.get("verdict")))
            if (r["rc"] == "0" and s.get("config") == "boxout" and
                    not (isinstance(s.get("evictions"), int) and s["evictions"] > 0)):
                problems.append("%s: box-out run without evictions (%s)" %
                                (r["name"], s.get("evictions")))
    return problems


def samples_table(runs):
    """Markdown lines: bbmmc sample x configuration -> cell; [] when no sample ran."""
    cells, samples, configs = {}, [], []
    for r in runs:
        for s in r["samples"]:
            name, config = str(s.get("sample")), str(s.get("config"))
            if name not in samples:
                samples.append(name)
            if config not in configs:
                configs.append(config)
            cells[(name, config)] = sample_cell(r, s)
    if not samples:
        return []
    order = list(SAMPLE_CONFIGS)
    configs.sort(key=lambda c: (order.index(c) if c in order else len(order), c))
    out = ["## bbmmc samples on CUDA (verification against the sequential program)", "",
           "| sample | " + " | ".join(SAMPLE_CONFIGS.get(c, c) for c in configs) + " |",
           "|---" * (len(configs) + 1) + "|"]
    for name in samples:
        out.append("| %s | %s |" % (name, " | ".join(cells.get((name, c), "-")
                                                     for c in configs)))
    return out


def main(argv):
    if len(argv) != 2:
        sys.stderr.write("usage: summarize.py RESULTS_TXT\n")
        return 1
    runs = parse(argv[1])
    out = []
    w = out.append

    w("## Steps")
    w("")
    w("| step | subset | rc | time s (est.) | verified | note |")
    w("|---|---|---|---|---|---|")
    for r in runs:
        res = r["results"]
        if res:
            ok = all(x.get("verified") == 1 for x in res)
            ver = "yes" if ok else "NO"
        else:
            ver = "-"
        note = r["note"].replace("|", "/")
        w("| %s | %s | %s | %s (%s) | %s | %s |" % (r["name"], r["subset"], r["rc"], r["wall"],
                                                   r["est"], ver, note))
    w("")

    ceilings = {}
    concurrent = None
    for r in runs:
        for c in r["ceilings"]:
            if isinstance(c.get("device"), int):
                ceilings[c["device"]] = c
        for c in r["concurrent"]:
            concurrent = c
    if ceilings:
        w("## Ceilings (GB/s; device copy counts bytes read + written)")
        w("")
        w("| GPU | device memory | H2D pinned | D2H pinned |")
        w("|---|---|---|---|")
        for d in sorted(ceilings):
            c = ceilings[d]
            w("| %d | %s | %s | %s |" % (d, gb(c.get("dev_bw")), gb(c.get("h2d_bw")),
                                        gb(c.get("d2h_bw"))))
        if concurrent:
            w("| all %s at once (aggregate) | %s | %s | %s |" % (
                concurrent.get("gpus"), gb(concurrent.get("dev_bw")),
                gb(concurrent.get("h2d_bw")), gb(concurrent.get("d2h_bw"))))
        w("")

    def ceiling(gpus, key):
        vals = [ceilings[d].get(key) for d in range(gpus) if d in ceilings]
        vals = [v for v in vals if isinstance(v, (int, float)) and v > 0]
        if len(vals) != gpus:
            return None
        return sum(vals) / len(vals)

    perf = [(r, x) for r in runs if r["subset"] in ("perf", "trace") for x in r["results"]]
    if perf:
        def key(x):
            return (x.get("sample"), x.get("n"), x.get("steps"), x.get("tiles_per_gpu"),
                    x.get("capacity"))

        def baseline(x):
            same = [y for _, y in perf if key(y) == key(x) and y.get("gpus") == 1]
            pref = [y for y in same if y.get("reserve") == x.get("reserve")]
            pick = (pref or [y for y in same if y.get("reserve") == 1] or same)
            return pick[0] if pick else None

        w("## Stencil runs")
        w("")
        w("| run | n | steps | gpus | reserve | seconds | speed-up vs 1 GPU | ideal s "
          "| measured / ideal | manager % | h2d / min | d2h / min | peer MB | d2d B "
          "| evictions | verified |")
        w("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r, x in perf:
            g = x.get("gpus") or 1
            sec = x.get("seconds")
            dev, h2d, d2h = (ceiling(g, "dev_bw"), ceiling(g, "h2d_bw"), ceiling(g, "d2h_bw"))
            ideal = None
            if dev and h2d and d2h:
                ideal = (x.get("bytes_device", 0) / (g * dev) + x.get("bytes_h2d_min", 0) /
                         (g * h2d) + x.get("bytes_d2h_min", 0) / (g * d2h))
            ratio = sec / ideal if ideal and sec is not None else None
            speed = None
            if g > 1:
                b = baseline(x)
                if b and b.get("seconds") and sec:
                    speed = b["seconds"] / sec
            mgr = (100.0 * x.get("manager_seconds", 0) / sec) if sec else None

            def over(a, b):
                return "%.3f" % (a / b) if a is not None and b else "-"

            w("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                r["name"], x.get("n"), x.get("steps"), g, x.get("reserve"), fmt(sec, "%.4f"),
                fmt(speed, "%.2f"), fmt(ideal, "%.4f"), fmt(ratio, "%.2f"), fmt(mgr, "%.2f"),
                over(x.get("bytes_h2d"), x.get("bytes_h2d_min")),
                over(x.get("bytes_d2h"), x.get("bytes_d2h_min")),
                fmt(x.get("bytes_peer", 0) / 1e6, "%.1f"), x.get("bytes_d2d"),
                x.get("evictions", "-"), "yes" if x.get("verified") == 1 else "NO"))
        w("")
        w("ideal = bytes_device/(gpus*dev_bw) + bytes_h2d_min/(gpus*h2d_bw) + "
          "bytes_d2h_min/(gpus*d2h_bw), ceilings of GPUs 0..gpus-1 from this call "
          "(measured / ideal = 1.00 is at the roofline); seconds: from the first "
          "tile to both arrays synchronised to the host (reservations and pinning are "
          "setup, reported apart in the RESULT lines); manager % = "
          "manager_seconds (of the timed part) / seconds; speed-up = seconds on 1 GPU (same n, steps, tiles, "
          "capacity; same reserve where run) / seconds.")
        w("")

    problems = []
    for r in runs:
        if r["rc"] not in ("0", "skip"):
            problems.append("%s: rc=%s %s" % (r["name"], r["rc"], r["note"]))
        elif r["rc"] == "skip":
            problems.append("%s: skipped (%s)" % (r["name"], r["note"]))
        for x in r["results"]:
            if x.get("verified") != 1:
                problems.append("%s: not verified (max_rel_err %s)" % (r["name"],
                                                                       x.get("max_rel_err")))
            if x.get("reserve") == 1 and x.get("bytes_d2d", 0) != 0:
                problems.append("%s: reserve on but bytes_d2d = %s" % (r["name"],
                                                                       x.get("bytes_d2d")))
    problems += sample_problems(runs)
    w("## Problems")
    w("")
    if problems:
        for p in problems:
            w("- " + p)
    else:
        w("none: every step exited 0, every result verified, no instance grew under reserve")
    table = samples_table(runs)
    if table:
        w("")
        out += table
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
