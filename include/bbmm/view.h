/* Views: how a tile's kernel finds its data on a device.
 *
 * For each array a tile required, the runtime hands the kernel a view: the
 * pieces (disjoint boxes, each in one device allocation) that together cover
 * everything the tile asked for. One piece is the common case and allows
 * direct addressing; with several, the kernel picks the piece holding each
 * access.
 *
 * Plain C, usable from C, C++, CUDA device code and (by copying the fields
 * into kernel arguments) OpenCL. */
#ifndef BBMM_VIEW_H_
#define BBMM_VIEW_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __CUDACC__
#define BBMM_HD __host__ __device__
#else
#define BBMM_HD
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define BBMM_MAX_RANK 8

/* One box of an array resident in one device allocation. Element
 * (i_0, ..., i_{r-1}) with lo[d] <= i_d < hi[d] lives at byte
 *   offset + elem_size * sum_d (i_d - lo[d]) * stride[d]
 * from `data` (a device pointer on CUDA and the host backend; the cl_mem on
 * OpenCL, where `offset` is the piece's offset inside that buffer). */
typedef struct bbmm_piece {
  int64_t lo[BBMM_MAX_RANK];
  int64_t hi[BBMM_MAX_RANK];
  int64_t stride[BBMM_MAX_RANK]; /* in elements; stride[rank-1] == 1 */
  void* data;
  uint64_t offset;
} bbmm_piece;

/* All pieces of one array for one tile. `pieces` stays valid until the tile
 * is released. */
typedef struct bbmm_view {
  int rank;
  int npieces;
  size_t elem_size;
  const bbmm_piece* pieces;
} bbmm_view;

/* Address of element `idx` in piece `p` (no bounds check). */
static inline BBMM_HD void* bbmm_piece_at(const bbmm_piece* p, size_t elem_size, int rank,
                                          const int64_t* idx) {
  int64_t off = 0;
  for (int d = 0; d < rank; ++d) off += (idx[d] - p->lo[d]) * p->stride[d];
  return (char*)p->data + p->offset + (size_t)off * elem_size;
}

/* True when piece `p` holds element `idx`. */
static inline BBMM_HD int bbmm_piece_contains(const bbmm_piece* p, int rank, const int64_t* idx) {
  for (int d = 0; d < rank; ++d) {
    if (idx[d] < p->lo[d] || idx[d] >= p->hi[d]) return 0;
  }
  return 1;
}

/* Address of element `idx` in the view, or NULL when no piece holds it. */
static inline BBMM_HD void* bbmm_view_at(const bbmm_view* v, const int64_t* idx) {
  for (int k = 0; k < v->npieces; ++k) {
    if (bbmm_piece_contains(&v->pieces[k], v->rank, idx)) {
      return bbmm_piece_at(&v->pieces[k], v->elem_size, v->rank, idx);
    }
  }
  return NULL;
}

#ifdef __cplusplus
}
#endif

#endif /* BBMM_VIEW_H_ */
