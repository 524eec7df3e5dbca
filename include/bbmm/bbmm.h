/* libbbmm C API: the stable interface for generated code and C users.
 *
 * A program registers its host arrays, then runs tiles: for each tile it
 * declares the boxes it reads and writes (require), lets the runtime place
 * them on a device (acquire), runs its kernel on the resulting views
 * (launch), pushes the boxes other tiles will read (flow_out) and ends the
 * tile (release). sync_to_host makes the host arrays current.
 *
 * Errors: every function returns a bbmm_status; on failure
 * bbmm_last_error_message() returns a message for the calling thread.
 *
 * Thread-safety: one runtime may be driven from several host threads at once
 * (typically one per device); a tile belongs to the thread that began it.
 * Runtime, array and tile objects must not be destroyed while in use. */
#ifndef BBMM_BBMM_H_
#define BBMM_BBMM_H_

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "bbmm/view.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum bbmm_status {
  BBMM_OK = 0,
  BBMM_ERROR_INVALID_ARGUMENT = 1, /* bad box, rank, size, handle or call order */
  BBMM_ERROR_OUT_OF_MEMORY = 2,    /* a tile cannot fit on its device */
  BBMM_ERROR_BACKEND = 3,          /* a device operation failed */
  BBMM_ERROR_CONFLICT = 4,         /* checking mode: overlapping writes by two devices */
  BBMM_ERROR_INTERNAL = 5
} bbmm_status;

typedef enum bbmm_backend_kind {
  BBMM_BACKEND_AUTO = 0, /* cuda if a GPU is present, else host */
  BBMM_BACKEND_HOST = 1,
  BBMM_BACKEND_CUDA = 2,
  BBMM_BACKEND_OPENCL = 3
} bbmm_backend_kind;

typedef enum bbmm_access {
  BBMM_READ = 1,       /* the tile reads the box */
  BBMM_WRITE = 2,      /* the tile writes EVERY element of the box (no read-in) */
  BBMM_READ_WRITE = 3, /* the tile reads, or writes only part of, the box */
  BBMM_READ_TRANSIENT = 5 /* BBMM_READ, and the device needs the box only until the next
                             phase boundary (bbmm_phase_boundary): an instance allocated
                             for it (and only such boxes) is freed there once no open
                             tile holds it, e.g. the pivot row of a step of LU */
} bbmm_access;

typedef enum bbmm_eviction_policy { BBMM_EVICT_LRU = 0 } bbmm_eviction_policy;

/* When a device's results go back to the host copy. Lazily, a box written on a device is
 * copied back only when it is boxed out, synchronised or read elsewhere through the host;
 * eagerly, right behind the kernel of the tile that wrote it, when the tile is released
 * (the copy runs under the following tiles' work, and boxing the instance out later has
 * nothing left to copy: its memory is reusable as soon as that copy ends, instead of the
 * allocation that reuses it waiting for a write-back issued only then). */
typedef enum bbmm_write_back {
  BBMM_WRITE_BACK_LAZY = 0,  /* always lazily (the default) */
  BBMM_WRITE_BACK_EAGER = 1, /* always eagerly (every write costs a copy to the host) */
  BBMM_WRITE_BACK_AUTO = 2   /* lazily, and eagerly on a device from the first time it had to
                                box out data that only it held (it is out of core: what it
                                writes leaves it anyway) */
} bbmm_write_back;

/* How the CUDA backend moves host arrays to and from the GPUs. Pinned: each registered array
 * is page-locked (cudaHostRegister) and the copy engines read and write it directly; the
 * registration costs about 0.1 s per GiB (more with several GPUs) and 0.025 s per GiB to
 * undo. Staged: the arrays stay pageable; each copy goes through a pinned buffer per copy
 * stream, packed and unpacked by host threads (no registration cost; the host threads'
 * copy bandwidth, 42-53 GB/s on an H100 machine, caps the copies of all GPUs together).
 * Auto: staged while the registered arrays fit in the devices' memory together (each byte
 * crosses PCIe about once each way), pinned from the registration that makes them exceed it
 * (out of core, bytes cross many times). */
typedef enum bbmm_host_copies {
  BBMM_HOST_COPIES_AUTO = 0,   /* the default */
  BBMM_HOST_COPIES_PINNED = 1,
  BBMM_HOST_COPIES_STAGED = 2
} bbmm_host_copies;

enum { BBMM_ARRAY_READ_ONLY = 1 };

typedef struct bbmm_options {
  bbmm_backend_kind backend;
  int devices;                /* 0: backend default (host: 4, GPUs: all) */
  uint64_t device_memory;     /* per-device byte limit; 0: whole device (host: none) */
  const char* trace_file;     /* Chrome/Perfetto JSON trace, or NULL */
  bbmm_eviction_policy eviction_policy;
  double growth_threshold;    /* grow an instance to the hull when waste <= this share */
  int check;                  /* nonzero: detect overlapping writes by two devices */
  int peer_access;            /* 0: devices copy to each other through host memory (flow-out
                                 staged by the host; default 1: peer copies where the
                                 hardware allows; the host backend simulates either) */
  int host_poison;            /* host backend: fill new device memory with 0xA5 (default 1) */
  int cuda_devices_per_gpu;   /* CUDA: logical devices per GPU, each with its own streams and
                                 capacity (default 1; more shows multi-device behaviour on one
                                 GPU) */
  int cuda_copy_kernel;       /* CUDA: strided device-to-device and peer boxes copied by a
                                 kernel (default 1) or by the copy engines (0) */
  int cuda_copy_streams;      /* CUDA: copy streams per direction and device, 1..8 (default 2;
                                 0: the default) */
  int cuda_peer_copy_kernel;  /* CUDA: strided boxes between GPUs by the copy kernel (1, with
                                 cuda_copy_kernel) or by the copy engines (0, the default),
                                 same-device boxes unchanged */
  int cuda_peer_push;         /* CUDA: copies between devices issued by the source device's
                                 worker on its streams (1, the default) or by the
                                 destination's (0) */
  bbmm_host_copies cuda_host_copies; /* CUDA: how host arrays are copied (default
                                 BBMM_HOST_COPIES_AUTO: staged in core, pinned out of
                                 core) */
  bbmm_write_back write_back; /* when results go back to the host (default
                                 BBMM_WRITE_BACK_LAZY: when boxed out, synchronised or read
                                 through the host) */
  int cuda_staging_threads;   /* CUDA: host threads that copy staged host bytes, 1..64 (0:
                                 the default, 16 for one GPU and 32 for more, at most half
                                 the host's hardware threads) */
  int merge_copies;           /* boxes of one copy batch that continue one another in both
                                 places (the row blocks of consecutive tiles, say) copied as
                                 one rectangle (default 1): fewer, larger copies */
  int tile_plans;             /* a tile with the requirements of an earlier tile of its device,
                                 whose every box was a hit in instances still there, reuses
                                 that tile's placement (default 1; planned_tiles counts them) */
} bbmm_options;

/* Fills `opts` with defaults, then applies BBMM_BACKEND, BBMM_DEVICES,
 * BBMM_DEVICE_MEMORY (e.g. "64MiB"), BBMM_TRACE, BBMM_CHECK, BBMM_HOST_POISON, BBMM_PEER_ACCESS,
 * BBMM_CUDA_DEVICES_PER_GPU, BBMM_CUDA_COPY_KERNEL, BBMM_CUDA_PEER_COPY_KERNEL,
 * BBMM_CUDA_PEER_PUSH, BBMM_CUDA_HOST_COPIES (auto, pinned or staged), BBMM_CUDA_COPY_STREAMS, BBMM_CUDA_STAGING_THREADS, BBMM_MERGE_COPIES, BBMM_TILE_PLANS and BBMM_WRITE_BACK (auto,
 * eager or lazy) from the environment. Fails on a
 * malformed variable (the message names it). */
bbmm_status bbmm_options_init(bbmm_options* opts);

typedef struct bbmm_runtime bbmm_runtime;
typedef struct bbmm_array bbmm_array;
typedef struct bbmm_tile bbmm_tile;

/* The message of the calling thread's last failed call ("" if none). */
const char* bbmm_last_error_message(void);

/* Ends the program after an error it cannot go on from: prints "bbmm: <message>" (the
 * message formatted from `format` as by printf) on standard error and exits with `code`. When the process is one rank of several (a
 * runtime given MPI by bbmm_runtime_use_mpi, or bbmm_mpi_use_by_default called), it says
 * "bbmm: rank R of N: <message>" and stops every rank of the job (MPI_Abort with `code`)
 * instead of exiting alone, which would leave the others waiting for its boxes. The
 * generated code ends this way on every runtime error. */
#if defined(__cplusplus)
[[noreturn]]
#elif defined(__GNUC__)
__attribute__((noreturn))
#endif
void bbmm_fatal(int code, const char* format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Creates a runtime. Fails (BBMM_ERROR_INVALID_ARGUMENT) when `trace_file`
 * cannot be written. */
bbmm_status bbmm_runtime_create(const bbmm_options* opts, bbmm_runtime** out);
/* Starts initialising the devices of the backend `opts` names (null: the BBMM_*
 * environment) on a thread of its own and returns at once: on CUDA, the driver and
 * the primary contexts of the GPUs a runtime of these options would use (0.25 s for
 * one H100, 0.5 s for two), while the program does its own setup; the next
 * bbmm_runtime_create waits for it and finds them ready (its create_seconds
 * statistic is what remained). Nothing to do for the host and OpenCL backends. Call
 * it early in main, after constructors (not from one: the CUDA runtime registers its
 * kernels in constructors). Errors of the devices are reported by
 * bbmm_runtime_create; this call fails only for bad options or when no thread starts.
 * The code bbmmc generates calls it at the top of main (bbmm_gen_warm_up). */
bbmm_status bbmm_warm_up(const bbmm_options* opts);
/* Waits for outstanding work, writes the trace, frees everything, including
 * `rt`. Every array should be unregistered first (bbmm_array_unregister makes
 * its host copy valid): an array still registered is NOT synchronised to the
 * host, and destroy then returns BBMM_ERROR_INVALID_ARGUMENT naming it (after
 * freeing everything all the same), because its host memory had to stay
 * valid until now. */
bbmm_status bbmm_runtime_destroy(bbmm_runtime* rt);
int bbmm_device_count(const bbmm_runtime* rt);
/* The bytes `device` may hold: its memory, or bbmm_options.device_memory when smaller
 * (0 for a null runtime or a device that does not exist). */
uint64_t bbmm_device_memory(const bbmm_runtime* rt, int device);

/* Registers `rank`-dimensional host array `host` of `extents` elements of
 * `elem_size` bytes (1..16 .. any size) with element strides `strides`
 * (NULL: dense row-major). `name` is used in messages and traces. */
bbmm_status bbmm_array_register(bbmm_runtime* rt, const char* name, void* host,
                                size_t elem_size, int rank, const int64_t* extents,
                                const int64_t* strides, int flags, bbmm_array** out);
/* Makes the host copy valid, frees the array's device instances. */
bbmm_status bbmm_array_unregister(bbmm_runtime* rt, bbmm_array* array);

/* Allocates on `device` one instance of `array` covering box [lo, hi),
 * reading nothing in, so that the tiles of that device whose boxes lie inside
 * it find their memory in place: no instance grows later, and no
 * device-to-device copy moves data between instances. Call it before the
 * tiles, with each device's allocation hull (e.g. the rows a device owns plus
 * its halo). Unused instances of the device overlapping the box are absorbed
 * (the new instance covers them too; their valid data moves into it); one
 * held by an open tile is an error (BBMM_ERROR_INVALID_ARGUMENT), and so is a
 * box outside the array. BBMM_ERROR_OUT_OF_MEMORY when it does not fit even
 * after boxing out unused instances (nothing changed). Afterwards it is an
 * ordinary unused instance: under memory pressure it may be boxed out.
 * Returns without waiting for device work. */
bbmm_status bbmm_reserve(bbmm_runtime* rt, int device, bbmm_array* array, const int64_t* lo,
                         const int64_t* hi);

/* Starts a tile on `device`. A tile handle is valid until bbmm_tile_release;
 * using it afterwards (a second release, a require) is reported as
 * BBMM_ERROR_INVALID_ARGUMENT ("stale tile handle"), never a crash, as long as
 * the runtime lives.
 *
 * device == BBMM_DEVICE_HOST: a host tile, run by the calling thread on the
 * program's own host arrays (for serial code, which one GPU thread would run
 * tens of times slower than a CPU core). Its acquire makes the required boxes
 * current in the host arrays and waits until the host may use them: what
 * devices wrote there is written back, and for written boxes the copies still
 * reading them finish; devices' copies of the written boxes become stale (the
 * next device tile reading them reads them in again). Its views are one piece
 * each, the whole host array; its launch runs the kernel function on the
 * calling thread and returns when it has finished (bbmm_launch_info: device
 * BBMM_DEVICE_HOST, queue NULL); flow_out does nothing (the host is where
 * device tiles read from). Not over several ranks (BBMM_ERROR_INVALID_ARGUMENT). */
#define BBMM_DEVICE_HOST (-2)
bbmm_status bbmm_tile_begin(bbmm_runtime* rt, int device, bbmm_tile** out);
/* Declares that the tile accesses box [lo, hi) of `array`. */
bbmm_status bbmm_tile_require(bbmm_tile* tile, bbmm_array* array, const int64_t* lo,
                              const int64_t* hi, bbmm_access access);
/* Places every required box on the tile's device (reusing, growing,
 * allocating, evicting, reading in). On BBMM_ERROR_OUT_OF_MEMORY nothing was
 * lost and the tile may be released. Returns without waiting for device work
 * (as do launch, flow_out and release): read-ins are ordered before the
 * tile's kernel by events. In checking mode, BBMM_ERROR_CONFLICT when the
 * tile writes what another device's tile wrote since the last
 * synchronisation point or what an open tile of another device writes. */
bbmm_status bbmm_tile_acquire(bbmm_tile* tile);
/* The view of `array` for the acquired tile; valid until release. */
bbmm_status bbmm_tile_view(bbmm_tile* tile, bbmm_array* array, bbmm_view* out);

typedef struct bbmm_launch_info {
  int device;
  void* queue; /* cudaStream_t, cl_command_queue, or NULL on the host backend */
} bbmm_launch_info;
typedef void (*bbmm_kernel_fn)(const bbmm_launch_info* info, void* args);
/* Runs `fn` in the device's queue after the tile's read-ins, with a copy of
 * the `args_size` bytes at `args` (the caller's buffer may go away). */
bbmm_status bbmm_tile_launch(bbmm_tile* tile, bbmm_kernel_fn fn, const void* args,
                             size_t args_size);
/* Pushes box [lo, hi) (written by the tile) to the other devices holding it,
 * and to the host where no device does. */
bbmm_status bbmm_tile_flow_out(bbmm_tile* tile, bbmm_array* array, const int64_t* lo,
                               const int64_t* hi);
/* Ends the tile (also after a failed acquire) and frees `tile`. */
bbmm_status bbmm_tile_release(bbmm_tile* tile);

/* Runs over several hosts (a transport between ranks: bbmm_runtime_use_mpi in
 * bbmm/mpi.h). This runtime's rank, and the number of ranks (0 and 1 without). */
int bbmm_rank(const bbmm_runtime* rt);
int bbmm_rank_count(const bbmm_runtime* rt);
/* Sends box [lo, hi) of `array`, as the program holds it now (what only devices hold is
 * written back first), to rank `to_rank` with `tag` (>= 0); receives into box [lo, hi)
 * what rank `from_rank` sends with `tag`, and those values become the array's (device
 * copies of the box go stale; no open tile may hold it). A receive matches the sender's
 * earliest unmatched send with its tag; both boxes have the same extents. Neither waits:
 * later tiles' read-ins wait for a receive, bbmm_array_unregister for both. The host array
 * must be dense row-major. BBMM_ERROR_INVALID_ARGUMENT without a transport, for a box
 * outside the array, a read-only array (receive), or this rank. */
bbmm_status bbmm_array_send(bbmm_runtime* rt, bbmm_array* array, const int64_t* lo,
                            const int64_t* hi, int to_rank, int tag);
bbmm_status bbmm_array_receive(bbmm_runtime* rt, bbmm_array* array, const int64_t* lo,
                               const int64_t* hi, int from_rank, int tag);

/* Starts copying to the host copy of `array` the elements only devices hold and
 * returns without waiting for them (bbmm_sync_to_host and bbmm_array_unregister
 * wait). Starting the write-backs of several arrays before waiting for any lets
 * their copies run together. */
bbmm_status bbmm_array_write_back(bbmm_runtime* rt, bbmm_array* array);

/* Declares that the program will not read the current values of `array` again (a
 * scratch array after its last use): the elements only devices hold are dropped, never
 * written back, and the host copy, as it is (with whatever was written back to it
 * before, or is being written back now), becomes the array's value; a later tile that
 * reads the array reads it in from there. Saves the device-to-host copies of arrays a
 * program only needs during a computation (e.g. the second array of a two-array
 * stencil when only the first is the result). The devices' memory is freed as usual
 * (boxing out, bbmm_array_unregister). Fails with BBMM_ERROR_INVALID_ARGUMENT when a
 * tile holding the array is open. Read-only arrays: nothing to do. */
bbmm_status bbmm_array_discard(bbmm_runtime* rt, bbmm_array* array);
/* Makes the host copy of `array` valid everywhere and waits for it. */
bbmm_status bbmm_sync_to_host(bbmm_runtime* rt, bbmm_array* array);
/* Waits for all devices; starts a new checking epoch. */
bbmm_status bbmm_synchronize(bbmm_runtime* rt);
/* Starts a new checking epoch without waiting: a phase boundary. The tiles begun
 * after it follow those begun before it in program order (the runtime orders
 * every tile after the ones issued before it in any case), so checking mode
 * compares a tile's writes only with other devices' writes since the last
 * boundary or synchronisation point; tiles still open keep their check. It also
 * frees the instances allocated for BBMM_READ_TRANSIENT boxes that no open tile
 * holds. The code bbmmc generates calls it at the start of every phase. */
bbmm_status bbmm_phase_boundary(bbmm_runtime* rt);

/* Counters of one device (device == -1: all devices together).
 * manager_seconds: time the calling threads spent inside acquire, launch,
 * flow_out, release and reserve for this device. copies: backend copy calls
 * (a batch of boxes counts once); boxes_copied: rectangles moved (boxes of a batch
 * that continue one another count once, merge_copies). The host_pin
 * fields belong to the runtime, not to a device: they appear in the total
 * only (time and bytes of pinning registered host arrays, at registration). */
typedef struct bbmm_stats {
  uint64_t bytes_allocated, peak_bytes_allocated, instances;
  uint64_t hits_exact, hits_contained, hits_grown, misses, pieces;
  uint64_t evictions, bytes_evicted, writebacks, bytes_written_back;
  uint64_t bytes_h2d, bytes_d2h, bytes_d2d, bytes_peer;
  uint64_t copies, kernels, tiles;
  double manager_seconds;
  uint64_t reservations, bytes_reserved, boxes_copied;
  uint64_t bytes_host_pinned;
  double host_pin_seconds;
  /* Seconds of bbmm_reserve on this device (part of manager_seconds: allocating the
   * reserved instances, setup rather than tile path), and of unpinning host arrays at
   * unregistration (total only). */
  double reserve_seconds;
  double host_unpin_seconds;
  /* Bytes of array boxes sent to and received from other ranks (a run over several
   * hosts; total only), and the part of the bytes sent that went straight from
   * device memory (the host backend's devices, or GPUs with a CUDA-aware MPI), not
   * through the host arrays. */
  uint64_t bytes_sent_ranks, bytes_received_ranks, bytes_sent_from_devices;
  /* Host tiles (BBMM_DEVICE_HOST; total only): how many, and the seconds their
   * kernels ran on the calling threads (their acquire's waits and write-backs are
   * in manager_seconds). */
  uint64_t host_tiles;
  double host_tile_seconds;
  /* Views (one per tile and array) with more than one piece: their kernels address
   * each access in its piece (bbmmc's multi-piece kernels), slower than one piece. */
  uint64_t multi_piece_views;
  /* Seconds bbmm_runtime_create took (total only): on CUDA the GPUs' contexts, pools,
   * streams and workers; code that creates the runtime inside its timed region (bbmmc's
   * generated code does, at its first scop) pays it there. */
  double create_seconds;
  /* Tiles acquired from the plan of an earlier tile of the device with the same
   * requirements, while the instances of its arrays there stayed the same (a
   * recurring stencil tile whose every box was a hit: its pieces, views and read-in
   * boxes reused rather than searched again; its reads are still made valid). */
  uint64_t planned_tiles;
} bbmm_stats;
bbmm_status bbmm_stats_get(const bbmm_runtime* rt, int device, bbmm_stats* out);
/* Writes the statistics as a table, or as JSON. */
bbmm_status bbmm_stats_print(const bbmm_runtime* rt, FILE* out);
bbmm_status bbmm_stats_print_json(const bbmm_runtime* rt, FILE* out);

#ifdef __cplusplus
}
#endif

#endif /* BBMM_BBMM_H_ */
