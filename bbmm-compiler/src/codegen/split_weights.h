#pragma once
// Split points weighted by work: the statement instances of each iteration of a 1-D
// partition's split loop, as a generated C function, so that the generated code can give
// every device an equal share of the work instead of an equal share of the iterations. A
// triangular inner loop (syrk's j <= i, correlation's j > i) or a range that moves with the
// serial loops (lu's rows below the pivot, summed over all pivots) makes iterations carry
// unequal work; an even split of the range then loads the busiest of 4 devices with up to
// 1.8 times its share (docs/bbmmc.md). The generated code samples the function along the
// range and splits the cumulative work (bbmm_gen_weights in bbmm/generated_support.h).

#include <string>
#include <vector>

#include "poly/model.h"
#include "poly/partition.h"

namespace bbmm::compiler {

// A statement of a partition's phases lying in its split loop, and the position of that
// loop among the statement's iterators (domain dimensions).
struct SplitStatement {
  int statement = 0;
  int dim = 0;
};

// The statements of "part"'s phases inside the loop its dimension "d" splits.
std::vector<SplitStatement> split_statements(const Scop& scop, const Partition& part, size_t d);

// The values of "part"'s dimension "d" over every instance of its phases (all serial
// iterations): a 1-D set over the scop parameters (null when no statement lies in it).
isl::set split_range(const Scop& scop, const Partition& part, size_t d);

// The stride of the values of "range" (a 1-D set from split_range): 1 when they are dense,
// else s > 1 with the values congruent to the C expression "offset" (over the scop
// parameters, valid in "context") modulo s.
int64_t split_stride(const isl::set& range, const isl::set& context, std::string& offset);

// Whether every iteration of "part"'s 1-D range carries the same instances of every
// statement of its phases (each statement's domain is the range times a set of the other
// iterators): the even split is then the balanced one.
bool uniform_work(const Scop& scop, const Partition& part);

// The C definition of
//   static int64_t <fn>(const void* bbmm_xv, int64_t bbmm_row)
// returning the statement instances, over all phases of the 1-D partition "part" and all
// serial iterations, whose split iterator is bbmm_row. "ctx_struct" is the generated
// context type ("struct bbmm_s0_ctx"), "locals" the lines declaring the scop parameters
// from a pointer "bbmm_x" to it. The count is exact: the innermost loop of each statement
// becomes its trip count where the domain is convex along it, else every instance is
// enumerated. Empty when every iteration of the range carries the same work (every
// statement's domain is the range times a set of the other iterators): the even split is
// then the balanced one, and nothing is generated; empty too when counting a statement's
// instances of one iteration would enumerate more than one loop (the count would cost up
// to a serial run of the nest; the split stays even).
std::string row_work_function(const Scop& scop, const Partition& part, const std::string& fn,
                              const std::string& ctx_struct, const std::string& locals);

}  // namespace bbmm::compiler
