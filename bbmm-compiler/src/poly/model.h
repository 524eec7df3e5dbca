#pragma once
// The polyhedral model of a scop: statements with iteration domains, an original-order
// schedule and tagged access relations; the array table; the loop tree. Built from the
// front end's trees by build_models(); dependences are added by compute_dependences()
// (deps.h). Consumed by the later passes (partition, boxes, codegen).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "frontend/ast.h"
#include "frontend/diagnostics.h"
#include "frontend/source.h"
#include "poly/isl_util.h"

namespace bbmm::compiler {

enum class AccessKind { kRead, kWrite };

struct ArrayInfo {
  std::string name;        // isl tuple name, unique in the scop
  std::string c_name;      // the C spelling
  std::string elem_type;   // "double", "int", ... ("?" for undeclared read-only scalars)
  int elem_size = 0;       // bytes, 0 when unknown
  bool is_scalar = false;  // rank 0 (a C scalar variable)
  std::vector<std::string> extent_text;  // C spelling of each extent
  std::vector<isl::pw_aff> extents;      // each extent over the scop parameters
  Decl::Where where = Decl::Where::kGlobal;
  SourceLoc decl_loc;      // the declaration; the first use for undeclared scalars
  std::string unknown_type;  // declared with a type name bbmmc does not know (elem_type "?")
  bool read = false;
  bool written = false;
  bool live_in = false;   // some read in the scop sees a value from before the scop
  bool live_out = false;  // its values after the scop may be used
  // A scalar written inside the scop that some phase accesses in memory (classify_scalars,
  // poly/scalars.h): registered with the runtime as an array of one element, extents {1},
  // accessed as s[0] (Scop::memory_relation). False for arrays and read-only scalars.
  bool promoted = false;
};

struct Access {
  int id = 0;  // the tag: the access relation's domain is [S[...] -> ref<id>[]]
  AccessKind kind = AccessKind::kRead;
  int array = 0;
  int statement = 0;
  isl::map relation;  // S[...] -> A[...], domain = the statement's domain
  isl::map tagged;    // [S[...] -> ref<id>[]] -> A[...]
  SourceLoc loc;
  std::string text;   // "A[i][j - 1]"
  const Expr* expr = nullptr;  // the access in the tree (nullptr for implicit ones)
  std::string tag() const { return "ref" + std::to_string(id); }
};

// A child of a loop body (or of the scop): a loop or a statement, in textual order.
struct Node {
  bool is_loop = false;
  int index = 0;
};

struct LoopVerdict {
  bool carries = false;   // exact analysis (after privatisation) finds a carried dependence
  bool parallel = false;  // !carries, or asserted by `#pragma bbmm parallel`
  std::vector<std::string> reasons;      // "RAW on A: S1 -> S2", sorted
  std::vector<std::string> privatised;   // scalars privatised for this loop
  std::vector<std::string> blocking_scalars;  // scalars that make the loop serial
};

struct Loop {
  int id = 0;
  std::string iterator;  // isl dim name
  std::string c_name;    // the C iterator
  int depth = 0;         // 0 = outermost
  int parent = -1;
  std::vector<Node> body;
  std::vector<int> statements;  // every statement inside, in order
  int64_t step = 1;             // signed: negative for decreasing loops
  bool asserted_parallel = false;
  SourceLoc loc;
  SourceLoc pragma_loc;
  const Stmt* ast = nullptr;
  LoopVerdict verdict;
};

struct Statement {
  std::string name;  // S1, S2, ...
  int index = 0;
  std::vector<std::string> iterators;  // isl dim names, outermost first
  std::vector<int> loops;              // enclosing loops, outermost first
  std::vector<int> position;           // 2d+1 schedule constants c0..cd
  isl::set domain;
  isl::map schedule;                   // S[...] -> [c0, x0, c1, ..., cd, 0...]
  std::vector<int> accesses;           // indices into Scop::accesses (write first)
  SourceLoc loc;
  std::string text;  // the statement as parsed, re-printed
  const Stmt* ast = nullptr;
  const Expr* expr = nullptr;  // the assignment (nullptr for a declaration's init)
  const Decl* decl = nullptr;  // the declaration, for a declaration's init
  // A chained assignment `a = b = e` is two statements, `b = e;` then `a = b;` (C assigns
  // b first and gives a the value b now holds): for the second, "expr" is the outer
  // assignment and "rhs_value" the inner one's left-hand side, whose value it assigns.
  const Expr* rhs_value = nullptr;
  int phase = -1;  // index into Scop::phases (set with the dependences)
  // Set by the rescheduling pass (poly/reschedule.h) when it permuted the domain: domain
  // dimension d is the source iterator to_source[d], and source_c_names[k] is the C name of
  // source iterator k (the name the statement's text uses). Both empty when the statement
  // keeps its source order (dimension d is then the iterator of loop loops[d]).
  std::vector<int> to_source;
  std::vector<std::string> source_c_names;
  // Set instead of to_source when the pass skewed the domain (a wavefront): source
  // iterator k is the sum over d of source_rows[k][d] * domain dimension d, and domain
  // dimension d is the iterator of loop loops[d] (source_c_names as above).
  std::vector<std::vector<long>> source_rows;
};

// The last value of a live-out scalar that a phase keeps private: after each instance in
// "last" of the statement of write access "access", the kernel stores its local copy into
// the scalar's memory (s[0]), from which it returns to the host at the end of the scop.
struct CopyOut {
  int access = -1;  // a write of the scalar (index into Scop::accesses)
  isl::set last;    // the instances whose write no later write overwrites
};

// A phase: a parallel loop (or a serial group of statements) inside serial loops.
struct Phase {
  std::vector<int> serial_loops;  // outermost first
  int parallel_loop = -1;         // -1: no parallel loop (runs serially)
  // A serial region (parallel_loop -1) made of a wavefront (poly/block_wavefronts.h): the
  // parallel loop inside its outermost loop, whose iterations the threads of one CUDA block
  // share between barriers. -1 otherwise.
  int block_loop = -1;
  std::vector<int> statements;
  // Scalars written inside the scop, and small arrays, that this phase keeps in kernel
  // locals (indices into Scop::arrays, increasing; see poly/scalars.h): every value they
  // carry is produced and used within one iteration of the parallel loop (one execution
  // of the phase when it has none), so each tile, work-item or thread has its own copy.
  std::vector<int> private_scalars;
  std::vector<CopyOut> copy_outs;  // privates' last values (live-out ones)
};

struct Dependences {
  // All tagged: [S[...] -> ref<k>[]] -> [T[...] -> ref<l>[]].
  isl::union_map raw;           // value-based flow dependences
  isl::union_map war;           // anti dependences (read -> next writes)
  isl::union_map waw;           // output dependences (write -> next write)
  isl::union_map raw_asserted;  // flow with asserted loops' iterations unordered
  isl::union_set live_in;       // tagged reads that see a value from before the scop
  bool computed = false;
};

struct Scop {
  int index = 0;
  std::string function;
  std::string file;           // the file holding the pragmas
  SourceLoc begin_loc;        // `#pragma scop`
  SourceLoc end_loc;          // `#pragma endscop`
  size_t begin_byte = 0;      // offset in "file" of the `#pragma scop` line
  size_t end_byte = 0;        // offset just past the `#pragma endscop` line
  std::vector<std::string> params;  // isl parameter names (= C names)
  isl::set context;                 // constraints on the parameters (universe today)
  std::vector<ArrayInfo> arrays;
  std::vector<Statement> statements;
  std::vector<Loop> loops;
  std::vector<Access> accesses;
  std::vector<Node> body;
  int schedule_dims = 1;
  Dependences deps;
  std::vector<Phase> phases;

  isl::union_set domains() const;
  isl::union_map schedule() const;
  isl::union_map reads(bool tagged) const;
  isl::union_map writes(bool tagged) const;
  // Schedule of the tagged domains [S -> ref] (for dataflow on tagged accesses): the
  // statement's schedule plus a last dimension, 0 for reads and 1 for the write, since
  // a statement reads its operands before it writes.
  isl::union_map tagged_schedule() const;
  int statement_index(const std::string& name) const;
  // The C name that statement "stmt"'s text uses for its domain dimension "d": the C name of
  // loop loops[d], or of the source iterator after rescheduling (Statement::to_source).
  const std::string& c_iterator(int stmt, int d) const;
  // Whether access "access" goes through the runtime's memory: an array access, or an
  // access to a promoted scalar from a phase that does not keep it private.
  bool in_memory(int access) const;
  // The relation of access "access" as the runtime sees it: Access::relation, with the
  // range s[0] for a scalar (one element).
  isl::map memory_relation(int access) const;
  // Whether phase "phase" keeps scalar "array" in a kernel local.
  bool is_private(int phase, int array) const;
  int access_index_of_tag(const std::string& tag) const;
};

// Statement::position and Statement::schedule (the 2d+1 form) of every statement of "s"
// from its loop tree (Scop::body, Loop::body), after a pass rewrote the tree.
void rebuild_schedules(Scop& s);

// Statement "st" of "s" moved to new coordinates by "t" (S[old] -> S[new], injective on
// its domain): its domain and its accesses' relations, tagged ones included.
void map_statement(Scop& s, Statement& st, const isl::map& t);

// A skewed statement's new instances to its source ones (Statement::source_rows; empty
// rows: null), over its domain: injective, so its reverse maps each source instance to
// the new one.
isl::map source_map(const Statement& st);

// Everything bbmmc knows about one input. Declares the isl context first: it outlives
// every isl object below.
struct Program {
  std::unique_ptr<IslContext> isl;
  std::unique_ptr<SourceManager> sm;
  std::unique_ptr<TranslationUnit> tu;
  std::vector<Scop> scops;
  ~Program();  // frees the isl objects before the context
};

// Builds one model per scop of "tu". Errors (non-affine constructs, unknown extents,
// ...) go to "diag"; a scop with errors is left out of the result.
std::vector<Scop> build_models(const TranslationUnit& tu, SourceManager& sm, Diagnostics& diag,
                               IslContext& isl);

}  // namespace bbmm::compiler
