#pragma once
// Tile kernels of one phase (ARCHITECTURE.md section 5, pass 6): the intra-tile loops from
// isl's AST generator, with every access rewritten to box-local addressing.
// - host target: two plain C functions taking their arguments (the scop parameters, the
//   serial iterators, the tile parameters, read-only scalars and the pieces of every array,
//   by value) as one byte block: "<name>" addresses a single piece per array directly,
//   "<name>_pieces" picks the piece holding each access (access-function split);
// - opencl target: OpenCL C source of one kernel, one work-item per value of the
//   partitioned iterator (see opencl_codegen.h).

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "codegen/loop_ast.h"
#include "frontend/diagnostics.h"
#include "poly/boxes.h"
#include "poly/model.h"

namespace bbmm::compiler {

// What a phase's kernel receives, in this order. Shared by the host code and the kernel.
struct KernelSignature {
  std::vector<std::string> params;    // scop parameters (int64_t)
  std::vector<std::string> serial;    // serial iterators, C names (int64_t)
  std::vector<std::string> tile;      // tile parameters: bbmm_lo, bbmm_hi, ... (int64_t)
  std::vector<int> scalars;           // read-only scalars (indices into Scop::arrays)
  std::vector<int> arrays;            // arrays with pieces, promoted scalars included
  // Scalars the phase keeps private (Phase::private_scalars that it accesses): not
  // arguments, but locals declared at the top of the kernel.
  std::vector<int> privates;
};

KernelSignature kernel_signature(const Scop& scop, const ScopBoxes& boxes, int phase);

// The declarations "const int64_t N = <from>N;" of the scop parameters, serial iterators
// and tile parameters of "sig", then (with "scalars") of its read-only scalars, read from
// the argument block through "from" ("bbmm_a->" or "bbmm_a."), and of its private scalars
// ("double t = 0;", "type" spells their types), each on a line indented by two spaces;
// their names are appended to "names".
std::string kernel_arg_locals(const Scop& scop, const KernelSignature& sig, const std::string& from,
                              bool scalars, std::vector<std::string>& names,
                              const std::function<std::string(const std::string&)>& type =
                                  nullptr);

// The declaration of a private scalar or array ("type" as above), with a comment:
// "<type> t = 0;" or "<type> a[e0][e1] = {0};" (constant extents, poly/scalars.h).
std::string private_decl(const Scop& scop, int array,
                                const std::function<std::string(const std::string&)>& type = nullptr);

// The C declaration of the argument block "struct <name>_args { ... };".
std::string host_kernel_args_struct(const Scop& scop, const KernelSignature& sig,
                                    const std::string& name);

// The two host-target kernel functions "<name>" and "<name>_pieces" of "phase" (named
// "<fn_name>" and "<fn_name>_pieces" when "fn_name" is given: the GPU targets' host tiles),
// reading the argument block "struct <name>_args".
std::string host_kernel_functions(const Scop& scop, const ScopBoxes& boxes, int phase,
                                  const KernelSignature& sig, const std::string& name,
                                  const std::string& fn_name = "");

// The intra-tile loops of "phase" (statement instances of the tile, in the original order)
// with each statement printed by "print_statement" (given the statement index and the
// lines to fill; the statement's iterators are bound by the caller's code). Loops can be
// fixed to extra parameters (a work-item's or thread's coordinates): the loops then run
// only the instances with those values.
struct TileLoopOptions {
  bool one_iteration_per_item = false;  // partitioned iterator == the parameter "bbmm_x"
  // Statement index -> (loop id, parameter name) pairs: in that statement, the loop's
  // iterator equals the parameter. Every parameter named here is in "extra_params".
  std::map<int, std::vector<std::pair<int, std::string>>> fixed;
  std::vector<std::string> extra_params;
  // What the loops may assume of the parameters (with "extra_params"); null: only that
  // the tile is nonempty (lo < hi).
  isl::set known;
  int indent = 2;
};
using PrintStatement =
    std::function<void(int stmt, const std::vector<std::string>& bind, std::vector<std::string>& lines)>;
// The loops built once (isl's AST generator is the costly part), printed with any statement
// printer: the kernels of one phase with one piece and with several pieces per array.
class TileLoops {
 public:
  TileLoops(const Scop& scop, const ScopBoxes& boxes, int phase, const KernelSignature& sig,
            const TileLoopOptions& opts);
  std::string print(const PrintStatement& print_stmt) const;  // indented as "opts" says
  std::string print(const PrintStatement& print_stmt, int indent) const;
  // The same, the phase's block loop (Phase::block_loop) shared by the threads of a group
  // as "shared" says (its iterator filled in here); the plain loops when the phase has none.
  std::string print(const PrintStatement& print_stmt, int indent, SharedLoop shared) const;

 private:
  const Scop& scop_;
  int serial_ = 0;  // the phase's serial loops (bound outside the tile)
  std::string block_iterator_;  // the block loop's iterator in the AST ("" if none)
  std::string print_loops(const PrintStatement& print_stmt, int indent, const SharedLoop* shared) const;
  int indent_ = 2;
  std::unique_ptr<LoopAst> ast_;
};
// TileLoops(scop, boxes, phase, sig, opts).print(print_stmt).
std::string tile_loops(const Scop& scop, const ScopBoxes& boxes, int phase,
                       const KernelSignature& sig, const TileLoopOptions& opts,
                       const PrintStatement& print_stmt);

// The isl parameter names of a tile of "phase": the scop parameters, the serial
// iterators, the tile parameters, then "extra".
std::vector<std::string> tile_param_names(const KernelSignature& sig,
                                          const std::vector<std::string>& extra = {});

// The instances of statement "stmt" (of "phase") in one tile, over the parameters of
// tile_param_names(sig): the serial dimensions equal the serial iterators, the
// partitioned ones lie in [lo, hi).
isl::set tile_domain(const Scop& scop, const ScopBoxes& boxes, int phase,
                     const KernelSignature& sig, int stmt);

// The parameter constraints every tile satisfies (lo < hi per partition dimension).
isl::set tile_param_context(const Scop& scop, const ScopBoxes& boxes, int phase,
                            const KernelSignature& sig, const std::vector<std::string>& extra = {});

// How a kernel spells one array access: "acc" is the access (Scop::accesses; acc.array its
// array), "subs" the C text of its subscripts.
using AccessPrinter =
    std::function<std::string(const Access& acc, const std::vector<std::string>& subs)>;

// The block a kernel runs for one instance of statement "stmt": its source in a comment,
// its iterators bound ("const <iter_type> i = ..., j = ...;" from "bind") and the statement
// with its accesses replaced by "access"; appended to "lines".
// "count": the block also counts the instance (host-target kernels: BBMM_GEN_INSTANCE(),
// bbmm/generated_support.h). "operands_first" (C++ targets): see rewrite_statement.
void statement_block(const Scop& scop, int stmt, const std::vector<std::string>& bind,
                     const std::string& iter_type, const AccessPrinter& access,
                     std::vector<std::string>& lines, bool count = false,
                     bool operands_first = false);

// The statement "stmt" with each access in memory (Scop::in_memory: arrays and promoted
// scalars, whose one subscript is "0") replaced by "access(acc, subscripts)"; private and
// read-only scalars keep their C names. A declaration's init is printed as an assignment,
// a link of a chained assignment as its own assignment (Statement::rhs_value).
// With "operand_loads", a statement whose value calls a function first loads the reads
// every evaluation performs (not those under ?:, && or ||) into locals, one per distinct
// access, appended as "const auto bbmm_v<k> = <access>;": a math call inlines to branches
// that nvcc does not move loads across, so the loads would otherwise wait for one another
// (bscholes' V and T behind the log of S / K; C leaves the operands' order unspecified).
std::string rewrite_statement(const Scop& scop, int stmt, const AccessPrinter& access,
                              std::vector<std::string>* operand_loads = nullptr);

// Multi-piece kernels: each access reference of "phase" looks, once per kernel, for the
// piece holding the whole box the reference touches in the tile (poly/boxes.h,
// ArrayBoxes::access_boxes): "ref_piece_lookups" is the C/C++ text that declares, per
// reference, "bbmm_ref<id>" (the piece or NULL, found by "lookup": bbmm_gen_piece_of or
// bbmm_cu_piece_of, unless the C expression "per_element", BBMM_PIECE_LOOKUP=element, a test
// setting, holds) with its base pointer, offset and strides "bbmm_ref<id>_d/_o/_s<d>" and
// "bbmm_ref<id>_k", the piece of its last element for a per-element lookup, then
// "bbmm_direct", true when every reference has its piece. The kernel then runs its loops
// with "ref_direct_access" (each reference addressed in its piece, as fast as one piece) when
// bbmm_direct holds, else with each reference addressed in its piece when it has one and
// finding the piece of each element (starting from bbmm_ref<id>_k) when not.
std::string ref_piece_lookups(const Scop& scop, const ScopBoxes& boxes, int phase,
                              const std::string& lookup, const std::string& per_element,
                              const std::string& indent, std::vector<std::string>& locals);
std::string ref_direct_access(const Access& acc, const std::vector<std::string>& subs);

// True when a statement of phase "ph" writes "array" (kernels: const base pointers, OpenCL
// staging copied back only for written arrays).
bool phase_writes(const Scop& scop, const Phase& ph, int array);
std::string ref_name(const Access& acc);

// The access references statement "stmt" prints ("access" is called for them), in access
// id order: its accesses in memory (Scop::in_memory), one per access expression (a compound
// assignment's read and write share one, the first in the model's order), a
// declaration's write of a scalar in memory, and the write whose last value a private
// scalar's copy-out stores (Phase::copy_outs).
std::vector<const Access*> printed_references(const Scop& scop, int stmt);

}  // namespace bbmm::compiler
