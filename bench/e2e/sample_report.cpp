// The per-sample report of docs/performance.md ("Samples"): for each bbmmc sample, run on
// the host backend with D simulated devices (no capacity limit, so nothing is evicted),
// what the runtime allocated and moved, against what the program needs, counted with isl:
//
// - footprint: per device, the distinct elements its tiles touch over the whole run
//   (union over phases and serial iterations, isl_set_count_val) x element size; "alloc"
//   is the runtime's peak_bytes_allocated on that device; "convex" is one bounding box
//   per array around the device's footprint (what a one-box-per-array manager needs).
//   The table shows the largest device's ratio (alloc / exact, convex / exact).
// - transfers: the minimum to run the program with these tiles on these devices:
//   h2d_min = per device, the live-in elements it reads (values from before the scop);
//   peer_min = per reading device, the values (write instances) it reads that another
//   device produced (value-based RAW, asserted-parallel loops unordered);
//   d2h_min = every element the scop writes, once (the final values go home).
//   Measured: bytes_h2d, bytes_peer, bytes_d2h summed over the devices.
// - overhead: time inside libbbmm (manager_seconds, summed over devices: one host thread
//   drives them all) / wall time of the bbmmc-generated function.
//
// - across ranks (--ranks R: the <name>_mpi build under mpirun -np R, --devices D host
//   devices per rank, R x D devices numbered rank by rank as the MPI runtime does): the
//   minimum a run over ranks must move between them, every rank starting from the same
//   host arrays: rank_reads_min = per reading rank, the values (write instances) its
//   tiles read that a tile of another rank produced; gather_min = the final values
//   (write instances no later write overwrites) produced on ranks other than 0 that rank
//   0 did not already receive. Measured: bytes_received_ranks summed over the ranks (each
//   rank prints its statistics: BBMM_SAMPLE_RANK_OUTPUT=all, mpirun --tag-output), with
//   bytes_sent_ranks summed as a check; --max-rank-error E fails when they differ from
//   the minimum by more than E (a fraction).
//
// Which device runs which iterations mirrors the generated phase functions
// (codegen/host_codegen.cpp): a 1-D partition's whole range [from, to) is cut into
// n = min(D x BBMM_TILES_PER_DEVICE, to - from) tiles, tile k on device k*D/n: tiles of equal
// work where bbmmc generates a work function for the partition (codegen/split_weights.h;
// the same bbmm_gen_split of bbmm/generated_support.h over the statement instances of each
// iteration, counted here by isl; BBMM_SPLIT_BY=iterations turns it off as in the
// programs), else of equal iterations; a phase without a parallel loop runs on device 0.
// A 2-D partition that --partition=auto chose (rows_first) runs, with no capacity, as the
// 1-D split of its first loop (one tile along the second) and is placed as that; a device
// grid (--partition=2d) is not reported.
//
//   build/bench/e2e/bbmm_sample_report [--devices 4] [--markdown FILE] [SAMPLE...]
//   build/bench/e2e/bbmm_sample_report --ranks 3 --devices 1 [--max-rank-error 0.01]
// BBMM_SAMPLES_DIR (the kernels' sources) and BBMM_SAMPLES_BIN_DIR (the host-backend
// sample binaries) override the build's paths.

#include <isl/aff.h>
#include <isl/map.h>
#include <isl/set.h>
#include <isl/union_map.h>
#include <isl/union_set.h>
#include <isl/val.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#define BBMM_GEN_TARGET BBMM_BACKEND_HOST
#include "bbmm/generated_support.h"
#include "codegen/split_weights.h"
#include "driver/pipeline.h"
#include "poly/box_util.h"
#include "poly/boxes.h"
#include "poly/isl_util.h"

namespace bbmm::compiler {
namespace {

struct SampleRun {
  std::string name;
  std::string args;  // command line of the sample driver
  std::map<std::string, int64_t> params;  // the scop parameters those arguments set
};

// Sizes: each run takes well under a few seconds on the host backend.
const std::vector<SampleRun> kSamples = {
    {"floyd", "384", {{"n", 384}}},
    {"heat2d", "1024 20", {{"n", 1024}, {"tsteps", 20}}},
    {"fdtd2d", "800 900 20", {{"nx", 800}, {"ny", 900}, {"tmax", 20}}},
    {"heat3d", "96 10", {{"n", 96}, {"tsteps", 10}}},
    {"lu", "256", {{"n", 256}}},
    {"adi", "512 10", {{"tsteps", 10}, {"n", 512}}},
    {"mvt", "2048", {{"n", 2048}}},
    {"bscholes", "2000000", {{"n", 2000000}}},
    {"gemm", "384 384 384", {{"ni", 384}, {"nj", 384}, {"nk", 384}}},
    {"jacobi1d", "400000 50", {{"n", 400000}, {"tsteps", 50}}},
};

int64_t count(const isl::set& s) {
  isl_val* v = isl_set_count_val(s.get());
  if (!v) throw std::runtime_error("isl_set_count_val failed");
  int64_t n = isl_val_get_num_si(v);
  isl_val_free(v);
  return n;
}

// m[key] := m[key] united with "s".
template <typename K>
void unite_into(std::map<K, isl::set>& m, K key, const isl::set& s) {
  auto it = m.find(key);
  if (it == m.end()) m.emplace(key, s);
  else it->second = it->second.unite(s).coalesce();
}

// "s" with its parameters fixed, as a parameter-free set (so that dim_min is a constant).
isl::set drop_params(const isl::set& s) {
  isl_size np = isl_set_dim(s.get(), isl_dim_param);
  return isl::manage(isl_set_project_out(s.copy(), isl_dim_param, 0, np));
}

// The statement instances of one iteration of a partition's split loop (isl counts), for
// bbmm_gen_weights_init.
struct RowCounter {
  const Scop* s;
  isl::set fixed;
  std::vector<std::pair<int, int>> stmt_depth;  // (statement, position of the split loop)
  static int64_t call(const void* x, int64_t row) {
    const RowCounter* c = static_cast<const RowCounter*>(x);
    int64_t n = 0;
    for (auto [st, d] : c->stmt_depth) {
      isl_set* dom = c->s->statements[st].domain.intersect_params(c->fixed).release();
      dom = isl_set_fix_si(dom, isl_dim_set, d, static_cast<int>(row));
      n += count(isl::manage(dom));
    }
    return n;
  }
};

// The tiles of each device: per phase, the interval of its partitioned iterator.
class Placement {
 public:
  Placement(const Scop& s, const ScopBoxes& bx, const isl::set& fixed, int devices)
      : s_(s), fixed_(fixed), devices_(devices) {
    phase_of_.assign(s.statements.size(), -1);
    for (size_t p = 0; p < s.phases.size(); ++p)
      for (int st : s.phases[p].statements) phase_of_[st] = static_cast<int>(p);
    const char* tpd_env = std::getenv("BBMM_TILES_PER_DEVICE");
    int tpd = tpd_env ? std::max(1, std::atoi(tpd_env)) : 1;
    split_depth_.assign(s.statements.size(), -1);
    ranges_.assign(s.statements.size(), {});
    for (const Partition& part : bx.partitions) {
      // A 2-D partition of --partition=auto (rows_first) runs, with no capacity, as the 1-D
      // split of its first loop (one tile along the second): placed as that. A device grid
      // (--partition=2d) is not reported.
      if (part.dims.size() > 1 && !part.rows_first)
        throw std::runtime_error("2-D partitions split as a device grid (--partition=2d) are not reported");
      if (part.dims.empty()) continue;
      // The whole range: every value of the split loops over the partition's phases.
      isl::set vals;
      std::vector<std::pair<int, int>> stmt_depth;
      for (size_t slot = 0; slot < part.phases.size(); ++slot)
        for (int st : s.phases[part.phases[slot]].statements) {
          const Statement& S = s.statements[st];
          auto at = std::find(S.loops.begin(), S.loops.end(), part.dims[0].loops[slot][0]);
          if (at == S.loops.end()) continue;
          int d = static_cast<int>(at - S.loops.begin());
          stmt_depth.push_back({st, d});
          int n = static_cast<int>(S.iterators.size());
          isl_set* x = isl_set_project_out(S.domain.intersect_params(fixed).release(), isl_dim_set, d + 1, n - d - 1);
          x = isl_set_reset_tuple_id(isl_set_project_out(x, isl_dim_set, 0, d));
          isl::set v = isl::manage(x);
          vals = vals.is_null() ? v : vals.unite(v);
        }
      if (vals.is_null() || vals.is_empty()) continue;
      vals = drop_params(vals);
      int64_t from = value(isl::manage(isl_set_dim_min(vals.copy(), 0)));
      int64_t to = value(isl::manage(isl_set_dim_max(vals.copy(), 0))) + 1;
      int64_t n = std::min<int64_t>(static_cast<int64_t>(devices) * tpd, to - from);
      // Split points of equal work where the program has them (its work function).
      const char* by = std::getenv("BBMM_SPLIT_BY");
      bbmm_gen_split_by_work = !(by && std::string(by) == "iterations");
      const bool weighted = !row_work_function(s, part, "w", "struct c", "").empty();
      bbmm_gen_weights w{};
      if (weighted) {
        RowCounter counter{&s, fixed, stmt_depth};
        std::string offset;  // a constant: the parameters are fixed
        const int64_t stride = split_stride(vals, vals.params(), offset);
        bbmm_gen_weights_init(&w, from, to, stride, std::stoll(offset), &RowCounter::call,
                              &counter);
      }
      std::vector<std::pair<int64_t, int64_t>> per_device(devices, {0, 0});
      std::vector<std::vector<std::pair<int64_t, int64_t>>> tiles(devices);
      for (int64_t k = 0; k < n; ++k) {
        int dev = static_cast<int>(k * devices / n);
        int64_t lo, hi;
        bbmm_gen_split(weighted ? &w : nullptr, from, to, n, devices, k, &lo, &hi);
        if (lo < hi) tiles[dev].push_back({lo, hi});
      }
      for (auto [st, d] : stmt_depth) {
        split_depth_[st] = d;
        ranges_[st] = tiles;
      }
    }
  }

  // The instances of statement "st" that run on device "dev" (parameters fixed).
  isl::set on(int st, int dev) const {
    isl::set dom = s_.statements[st].domain.intersect_params(fixed_);
    if (split_depth_[st] < 0) return dev == 0 ? dom : isl::manage(isl_set_empty(dom.space().release()));
    isl::set out = isl::manage(isl_set_empty(dom.space().release()));
    for (auto [lo, hi] : ranges_[st][dev]) {
      isl_set* x = dom.copy();
      x = isl_set_lower_bound_si(x, isl_dim_set, split_depth_[st], lo);
      x = isl_set_upper_bound_si(x, isl_dim_set, split_depth_[st], hi - 1);
      out = out.unite(isl::manage(x));
    }
    return out;
  }

 private:
  static int64_t value(const isl::pw_aff& pa) {
    auto v = eval(pa, Values{});
    if (!v) throw std::runtime_error("unbounded partition range");
    return *v;
  }

  const Scop& s_;
  isl::set fixed_;
  int devices_;
  std::vector<int> phase_of_;
  std::vector<int> split_depth_;
  std::vector<std::vector<std::vector<std::pair<int64_t, int64_t>>>> ranges_;
};

struct Needs {
  std::vector<int64_t> exact;   // bytes, per device
  std::vector<int64_t> convex;  // bytes, per device
  int64_t h2d_min = 0, peer_min = 0, d2h_min = 0;
  std::vector<int64_t> rank_reads_min;  // bytes, per receiving rank
  int64_t gather_min = 0;               // bytes received by rank 0 at the end
};

// Per writing access, the values (write instances) that instances of a group (a device,
// or a rank's devices: `group(st)`, the instances of statement st there) read and that
// another group produced (value-based RAW, asserted-parallel loops unordered).
using Group = std::function<isl::set(int)>;
std::map<int, isl::set> values_from_others(const Scop& s, const isl::set& fixed, const Group& group) {
  std::map<int, isl::set> values;
  for (const isl::map& m : sorted_maps(s.deps.raw_asserted)) {
    int src = s.access_index_of_tag(tagged_ref(m.domain().space()));
    int snk = s.access_index_of_tag(tagged_ref(m.range().space()));
    if (src < 0 || snk < 0 || s.arrays[s.accesses[src].array].is_scalar) continue;
    isl::map inst = untag(m).intersect_params(fixed).intersect_range(group(s.accesses[snk].statement));
    unite_into(values, src, inst.domain().subtract(group(s.accesses[src].statement)));
  }
  return values;
}

// Bytes of `values` (per writing access).
int64_t bytes_of(const Scop& s, const std::map<int, isl::set>& values) {
  int64_t b = 0;
  for (const auto& [src, set] : values) b += count(set) * s.arrays[s.accesses[src].array].elem_size;
  return b;
}

// What a run over "ranks" ranks of "per_rank" devices each (devices = ranks x per_rank,
// numbered rank by rank) must move between ranks: see the header.
void rank_needs(const Scop& s, const Placement& place, const isl::set& fixed, int ranks, int per_rank,
                Needs& out) {
  auto on_rank = [&](int st, int rank) {
    isl::set dom = s.statements[st].domain.intersect_params(fixed);
    isl::set all = isl::manage(isl_set_empty(dom.space().release()));
    for (int d = rank * per_rank; d < (rank + 1) * per_rank; ++d) all = all.unite(place.on(st, d));
    return all;
  };
  out.rank_reads_min.assign(ranks, 0);
  std::map<int, isl::set> received_by_0;  // per writing access: write instances rank 0 reads
  for (int rank = 0; rank < ranks; ++rank) {
    std::map<int, isl::set> values = values_from_others(s, fixed, [&](int st) { return on_rank(st, rank); });
    out.rank_reads_min[rank] = bytes_of(s, values);
    if (rank == 0) received_by_0 = std::move(values);
  }
  // Write instances some later write overwrites (the sources of the output dependences).
  std::map<int, isl::set> overwritten;
  for (const isl::map& m : sorted_maps(s.deps.waw)) {
    int src = s.access_index_of_tag(tagged_ref(m.domain().space()));
    if (src >= 0) unite_into(overwritten, src, untag(m).intersect_params(fixed).domain());
  }
  for (size_t a = 0; a < s.accesses.size(); ++a) {
    const Access& w = s.accesses[a];
    if (w.kind != AccessKind::kWrite || s.arrays[w.array].is_scalar) continue;
    const int src = static_cast<int>(a);
    isl::set final_values = s.statements[w.statement].domain.intersect_params(fixed).subtract(on_rank(w.statement, 0));
    if (auto it = overwritten.find(src); it != overwritten.end()) final_values = final_values.subtract(it->second);
    if (auto it = received_by_0.find(src); it != received_by_0.end()) final_values = final_values.subtract(it->second);
    out.gather_min += count(final_values) * s.arrays[w.array].elem_size;
  }
}

Needs needs(const Scop& s, const ScopBoxes& bx, const std::map<std::string, int64_t>& params, int devices,
            int ranks = 1) {
  isl_set* f = s.context.copy();
  for (size_t k = 0; k < s.params.size(); ++k) {
    auto it = params.find(s.params[k]);
    if (it == params.end()) throw std::runtime_error("no value for parameter " + s.params[k]);
    f = isl_set_fix_si(f, isl_dim_param, k, it->second);
  }
  isl::set fixed = isl::manage(f);
  Placement place(s, bx, fixed, devices);
  Needs out;
  out.exact.assign(devices, 0);
  out.convex.assign(devices, 0);
  for (int dev = 0; dev < devices; ++dev) {
    std::map<int, isl::set> foot;  // per array
    for (const Access& a : s.accesses) {
      if (s.arrays[a.array].is_scalar) continue;
      unite_into(foot, a.array, place.on(a.statement, dev).apply(a.relation));
    }
    for (auto& [arr, set] : foot) {
      int64_t size = s.arrays[arr].elem_size;
      out.exact[dev] += count(set) * size;
      if (set.is_empty()) continue;
      isl::set flat = drop_params(set);
      int64_t vol = 1;
      for (int d = 0; d < static_cast<int>(isl_set_dim(flat.get(), isl_dim_set)); ++d) {
        auto mn = eval(isl::manage(isl_set_dim_min(flat.copy(), d)), Values{});
        auto mx = eval(isl::manage(isl_set_dim_max(flat.copy(), d)), Values{});
        vol *= *mx - *mn + 1;
      }
      out.convex[dev] += vol * size;
    }
  }
  // Live-in reads, per reading device.
  for (int dev = 0; dev < devices; ++dev) {
    std::map<int, isl::set> in;
    for (const isl::set& t : sorted_sets(s.deps.live_in)) {
      int acc = s.access_index_of_tag(tagged_ref(t.space()));
      if (acc < 0) continue;
      const Access& a = s.accesses[acc];
      if (s.arrays[a.array].is_scalar) continue;
      isl::set inst = isl::manage(isl_set_unwrap(t.copy())).domain().intersect(place.on(a.statement, dev));
      unite_into(in, a.array, inst.apply(a.relation));
    }
    for (auto& [arr, set] : in) out.h2d_min += count(set) * s.arrays[arr].elem_size;
  }
  // Values read on another device than their writer's.
  for (int dev = 0; dev < devices; ++dev)
    out.peer_min += bytes_of(s, values_from_others(s, fixed, [&](int st) { return place.on(st, dev); }));
  // Final values: every element written, once.
  std::map<int, isl::set> written;
  for (const Access& a : s.accesses) {
    if (a.kind != AccessKind::kWrite || s.arrays[a.array].is_scalar) continue;
    unite_into(written, a.array, s.statements[a.statement].domain.intersect_params(fixed).apply(a.relation));
  }
  for (auto& [arr, set] : written) out.d2h_min += count(set) * s.arrays[arr].elem_size;
  if (ranks > 1) rank_needs(s, place, fixed, ranks, devices / ranks, out);
  return out;
}

// The runtime's numbers for one run (BBMM_STATS=json) and the sample's timings.
struct Measured {
  std::vector<double> peak, h2d, d2h, peer, d2d, manager, evictions;
  double t_seq = 0, t_bbmm = 0;
  bool passed = false;
};

double number_after(const std::string& obj, const std::string& key) {
  size_t p = obj.find("\"" + key + "\":");
  if (p == std::string::npos) throw std::runtime_error("statistics lack " + key);
  return std::strtod(obj.c_str() + p + key.size() + 3, nullptr);
}

// Runs shell command `cmd` (a sample with the host backend's settings in front: `env`,
// then `prefix`, e.g. mpirun, then the binary), its output (with stderr) in `*text`;
// returns its exit status.
int run_command(const std::string& env, const std::string& prefix, const std::string& bin,
                const std::string& args, std::string* text) {
  const std::string cmd = env + " BBMM_BACKEND=host BBMM_STATS=json BBMM_DEVICE_MEMORY= BBMM_CHECK= "
                          "BBMM_HOST_POISON=0 " + prefix + bin + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) throw std::runtime_error("cannot run " + cmd);
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, pipe)) text->append(buf, n);
  return pclose(pipe);
}

Measured run_sample(const std::string& bin, const std::string& args, int devices) {
  std::string text;
  const int rc = run_command("BBMM_DEVICES=" + std::to_string(devices), "", bin, args, &text);
  Measured m;
  m.passed = rc == 0 && text.find("verification against the sequential program: PASSED") != std::string::npos;
  size_t t = text.find(": sequential ");
  if (t != std::string::npos) std::sscanf(text.c_str() + t, ": sequential %lf s, bbmmc %lf s", &m.t_seq, &m.t_bbmm);
  size_t j = text.find("{\"backend\"");
  if (j == std::string::npos) throw std::runtime_error(bin + " printed no statistics:\n" + text);
  size_t d = text.find("\"devices\":[", j);
  size_t end = text.find("\"total\"", d);
  for (size_t p = text.find('{', d); p != std::string::npos && p < end; p = text.find('{', p + 1)) {
    std::string obj = text.substr(p, text.find('}', p) - p);
    m.peak.push_back(number_after(obj, "peak_bytes_allocated"));
    m.h2d.push_back(number_after(obj, "bytes_h2d"));
    m.d2h.push_back(number_after(obj, "bytes_d2h"));
    m.peer.push_back(number_after(obj, "bytes_peer"));
    m.d2d.push_back(number_after(obj, "bytes_d2d"));
    m.manager.push_back(number_after(obj, "manager_seconds"));
    m.evictions.push_back(number_after(obj, "evictions"));
  }
  return m;
}

// A run of the <name>_mpi build over "ranks" ranks of "per_rank" host devices: every
// rank's bytes sent to and received from other ranks (BBMM_STATS=json, one line per rank,
// "[job,rank]<stdout>:" from mpirun --tag-output).
struct RankMeasured {
  std::vector<double> sent, received;
  bool passed = false;
  std::string text;
};

RankMeasured run_ranks(const std::string& bin, const std::string& args, int ranks, int per_rank) {
  RankMeasured m;
  const int rc = run_command("OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 BBMM_SAMPLE_RANK_OUTPUT=all "
                             "BBMM_DEVICES=" + std::to_string(per_rank),
                             std::string(BBMM_MPIEXEC) + " --oversubscribe --tag-output -np " + std::to_string(ranks) +
                                 " ",
                             bin, args, &m.text);
  // Each rank's output: mpirun tags each chunk it forwards with "[job,rank]<stdout>:",
  // and may cut a long line (the statistics) into chunks, tagging the next one in the
  // middle of the line.
  std::vector<std::string> out(ranks);
  int current = -1;
  for (size_t p = 0; p < m.text.size();) {
    int job = 0, rank = -1, used = 0;
    if (m.text[p] == '[' &&
        std::sscanf(m.text.c_str() + p, "[%d,%d]<stdout>:%n", &job, &rank, &used) == 2 && used > 0) {
      current = rank >= 0 && rank < ranks ? rank : -1;
      p += used;
      continue;
    }
    if (current >= 0) out[current] += m.text[p];
    if (m.text[p] == '\n') current = -1;
    ++p;
  }
  m.passed = rc == 0 && out[0].find("verification against the sequential program: PASSED") != std::string::npos;
  m.sent.assign(ranks, -1);
  m.received.assign(ranks, -1);
  for (int rank = 0; rank < ranks; ++rank) {
    size_t j = out[rank].find("{\"backend\"");
    if (j == std::string::npos) continue;
    std::string stats = out[rank].substr(j);  // the last thing a rank prints, one line
    stats.erase(std::remove(stats.begin(), stats.end(), '\n'), stats.end());
    size_t t = stats.find("\"total\"");
    if (t == std::string::npos) continue;
    m.sent[rank] = number_after(stats.substr(t), "bytes_sent_ranks");
    m.received[rank] = number_after(stats.substr(t), "bytes_received_ranks");
  }
  return m;
}

double sum(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s;
}

std::string fixed(double x, int digits) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", digits, x);
  return b;
}

std::string mib(double bytes) { return fixed(bytes / (1 << 20), 2); }

// The cross-rank report of sample "r" over "ranks" x "per_rank" devices: prints it, adds a
// row to "md"; returns whether it verified and stayed within "max_error" of the minimum.
bool report_ranks(const SampleRun& r, const Scop& s, const ScopBoxes& bx, int ranks, int per_rank,
                  double max_error, const std::string& bin_dir, std::ostringstream& md) {
  Needs n = needs(s, bx, r.params, ranks * per_rank, ranks);
  RankMeasured m = run_ranks(bin_dir + "/" + r.name + "_mpi", r.args, ranks, per_rank);
  bool ok = m.passed;
  for (int k = 0; k < ranks; ++k) {
    if (m.received[k] < 0) {
      std::cerr << r.name << ": no statistics from rank " << k << ":\n" << m.text;
      return false;
    }
  }
  double received = sum(m.received), sent = sum(m.sent);
  double reads_min = 0;
  for (int64_t b : n.rank_reads_min) reads_min += static_cast<double>(b);
  const double gather_min = static_cast<double>(n.gather_min), min = reads_min + gather_min;
  double error = min > 0 ? std::abs(received - min) / min : (received > 0 ? 1 : 0);
  std::cout << r.name << " (" << r.args << ", " << ranks << " ranks x " << per_rank << " host devices)\n";
  std::cout << "  rank  received MiB  sent MiB  reads min MiB\n";
  for (int k = 0; k < ranks; ++k)
    std::printf("  %4d  %12s  %8s  %13s\n", k, mib(m.received[k]).c_str(), mib(m.sent[k]).c_str(),
                mib(static_cast<double>(n.rank_reads_min[k])).c_str());
  std::printf("  between ranks: received %s MiB, sent %s MiB; minimum %s MiB (reads %s + gather on rank 0 %s); "
              "received / minimum %.4f; verification %s\n",
              mib(received).c_str(), mib(sent).c_str(), mib(min).c_str(), mib(reads_min).c_str(),
              mib(gather_min).c_str(),
              min > 0 ? received / min : 0, m.passed ? "PASSED" : "FAILED");
  if (sent != received) {
    std::cerr << r.name << ": " << sent << " bytes sent between ranks but " << received << " received\n";
    ok = false;
  }
  if (max_error >= 0 && error > max_error) {
    std::cerr << r.name << ": " << received << " bytes received between ranks, the minimum is " << min
              << " (off by " << fixed(100 * error, 2) << "%, more than --max-rank-error " << max_error << ")\n";
    ok = false;
  }
  md << "| " << r.name << " | " << r.args << " | " << ranks << " x " << per_rank << " | " << mib(received) << " | "
     << mib(reads_min) << " + " << mib(gather_min) << " | "
     << fixed(min > 0 ? received / min : 0, 4) << " | " << (m.passed ? "yes" : "NO") << " |\n";
  return ok;
}

int main_report(int argc, char** argv) {
  int devices = 4;
  int ranks = 1;
  double max_rank_error = -1;  // --max-rank-error: fail beyond it (negative: no check)
  double max_alloc = 0;  // --max-alloc-ratio: fail above it (0: no check)
  std::string markdown;
  std::vector<std::string> only;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--devices" && i + 1 < argc) devices = std::atoi(argv[++i]);
    else if (a == "--markdown" && i + 1 < argc) markdown = argv[++i];
    else if (a == "--max-alloc-ratio" && i + 1 < argc) max_alloc = std::atof(argv[++i]);
    else if (a == "--ranks" && i + 1 < argc) ranks = std::atoi(argv[++i]);
    else if (a == "--max-rank-error" && i + 1 < argc) max_rank_error = std::atof(argv[++i]);
    else if (a == "--help") {
      std::cout << "usage: bbmm_sample_report [--devices D] [--ranks R] [--markdown FILE] [--max-alloc-ratio R] "
                   "[--max-rank-error E] [SAMPLE...]\n  --max-alloc-ratio R: exit 1 when a device's peak allocation "
                   "exceeds R x its exact footprint (isl count)\n  --ranks R: run <name>_mpi under mpirun -np R, "
                   "D devices per rank, and report the bytes moved between ranks against the minimum (isl)\n"
                   "  --max-rank-error E: exit 1 when those bytes differ from the minimum by more than the "
                   "fraction E\n";
      return 0;
    } else only.push_back(a);
  }
  if (devices < 1 || ranks < 1) {
    std::cerr << "bbmm_sample_report: --devices and --ranks must be >= 1\n";
    return 1;
  }
  std::ostringstream md;
  if (ranks > 1) {
    md << "| sample | size | ranks x devices | received between ranks MiB | minimum MiB (reads + gather) | "
          "received / minimum | verified |\n|---|---|---|---|---|---|---|\n";
  } else {
  md << "| sample | size | alloc / exact (worst device) | convex / exact | h2d MiB (min) | peer MiB (min) | "
        "d2h MiB (min) | total / min | libbbmm s / bbmmc s | verified |\n";
  md << "|---|---|---|---|---|---|---|---|---|---|\n";
  }
  // The build's paths, unless the environment moves them (a copy on another machine).
  const char* env_src = std::getenv("BBMM_SAMPLES_DIR");
  const char* env_bin = std::getenv("BBMM_SAMPLES_BIN_DIR");
  const std::string samples_dir = env_src ? env_src : BBMM_SAMPLES_DIR;
  const std::string bin_dir = env_bin ? env_bin : BBMM_SAMPLES_BIN_DIR;
  int failures = 0;
  for (const SampleRun& r : kSamples) {
    if (!only.empty() && std::find(only.begin(), only.end(), r.name) == only.end()) continue;
    std::string kernel = samples_dir + "/" + r.name + "/" + r.name + ".c";
    Diagnostics diag;
    auto prog = analyze_file(kernel, PipelineOptions{}, diag);
    if (diag.has_errors() || prog->scops.size() != 1) {
      std::cerr << r.name << ": cannot analyse " << kernel << "\n";
      ++failures;
      continue;
    }
    const Scop& s = prog->scops[0];
    ScopBoxes bx = compute_boxes(s, BoxOptions{});
    if (ranks > 1) {
      if (!report_ranks(r, s, bx, ranks, devices, max_rank_error, bin_dir, md)) ++failures;
      continue;
    }
    Needs n = needs(s, bx, r.params, devices);
    Measured m = run_sample(bin_dir + "/" + r.name, r.args, devices);
    if (m.peak.size() != static_cast<size_t>(devices)) {
      std::cerr << r.name << ": statistics for " << m.peak.size() << " devices, expected " << devices << "\n";
      ++failures;
      continue;
    }
    double worst_alloc = 0, worst_convex = 0;
    std::cout << r.name << " (" << r.args << ", " << devices << " host devices)\n";
    std::cout << "  device   exact MiB  alloc MiB  convex MiB  alloc/exact  convex/exact  evictions\n";
    for (int d = 0; d < devices; ++d) {
      double ex = static_cast<double>(n.exact[d]);
      double ra = ex > 0 ? m.peak[d] / ex : 0, rc = ex > 0 ? n.convex[d] / ex : 0;
      worst_alloc = std::max(worst_alloc, ra);
      worst_convex = std::max(worst_convex, rc);
      std::printf("  %6d  %10s %10s %11s %12.3f %13.3f %10.0f\n", d, mib(ex).c_str(), mib(m.peak[d]).c_str(),
                  mib(static_cast<double>(n.convex[d])).c_str(), ra, rc, m.evictions[d]);
    }
    double h2d = sum(m.h2d), peer = sum(m.peer), d2h = sum(m.d2h);
    double min_total = static_cast<double>(n.h2d_min + n.peer_min + n.d2h_min);
    double overhead = m.t_bbmm > 0 ? sum(m.manager) / m.t_bbmm : 0;
    std::printf("  transfers MiB: h2d %s (min %s), peer %s (min %s), d2h %s (min %s), d2d %s; total/min %.3f\n",
                mib(h2d).c_str(), mib(static_cast<double>(n.h2d_min)).c_str(), mib(peer).c_str(),
                mib(static_cast<double>(n.peer_min)).c_str(), mib(d2h).c_str(),
                mib(static_cast<double>(n.d2h_min)).c_str(), mib(sum(m.d2d)).c_str(),
                min_total > 0 ? (h2d + peer + d2h) / min_total : 0);
    std::printf("  time: sequential %.3f s, bbmmc %.3f s, in libbbmm %.3f s (%.1f%%); verification %s\n", m.t_seq,
                m.t_bbmm, sum(m.manager), 100 * overhead, m.passed ? "PASSED" : "FAILED");
    if (!m.passed) ++failures;
    if (max_alloc > 0 && worst_alloc > max_alloc) {
      std::cerr << r.name << ": peak allocation " << fixed(worst_alloc, 3)
                << " x the exact footprint on the worst device, above --max-alloc-ratio "
                << fixed(max_alloc, 3) << "\n";
      ++failures;
    }
    md << "| " << r.name << " | " << r.args << " | " << fixed(worst_alloc, 3) << " | " << fixed(worst_convex, 3)
       << " | " << mib(h2d) << " (" << mib(static_cast<double>(n.h2d_min)) << ") | " << mib(peer) << " ("
       << mib(static_cast<double>(n.peer_min)) << ") | " << mib(d2h) << " (" << mib(static_cast<double>(n.d2h_min))
       << ") | " << fixed(min_total > 0 ? (h2d + peer + d2h) / min_total : 0, 3) << " | " << fixed(sum(m.manager), 3)
       << " / " << fixed(m.t_bbmm, 3) << " (" << fixed(100 * overhead, 1) << "%) | " << (m.passed ? "yes" : "NO")
       << " |\n";
  }
  std::cout << "\n" << md.str();
  if (!markdown.empty()) std::ofstream(markdown) << md.str();
  return failures ? 1 : 0;
}

}  // namespace
}  // namespace bbmm::compiler

int main(int argc, char** argv) {
  try {
    return bbmm::compiler::main_report(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "bbmm_sample_report: " << e.what() << "\n";
    return 1;
  }
}
