/* The device side of a cluster run: a plain C ABI between the `cutover` binary and the CUDA
 * backend plugin (libcutover_compat_cuda.so, compat/backends/cuda/nccl_cluster.cc), for
 * `compat run --suite cluster --backend cuda`. MPI (compat/cluster_api.h) stays the control
 * channel: it carries the NCCL unique id from rank 0 to every rank, the options every rank must
 * agree on and the results gathered to rank 0; this table carries the measured traffic, on one
 * NCCL communicator over every rank of the job (ncclCommInitRank), one device per rank.
 *
 * The binary dlsyms CUTOVER_CLUSTER_DEVICE_ENTRY_NAME in the plugin file and checks `abi` and
 * `struct_size` before calling anything in the table.
 *
 * Conventions of every call (as compat/plugin_api.h): CUTOVER_CLUSTER_DEVICE_OK (0) or an
 * error code, with a one-line NUL-terminated reason in `err` (capacity `err_size`, truncated).
 * Host buffers are the caller's. Collectives follow compat/cluster_api.h: float32, sum,
 * nccl-tests' meaning of `count`, send NULL for in place with the input where that header puts
 * it; every rank calls them in the same order.
 *
 * The watchdog: every wait of init_rank and the calls after it (the communicator's setup, a
 * stream's completion) polls, and after `timeout_s` without completion aborts the communicator
 * (ncclCommAbort) and returns CUTOVER_CLUSTER_DEVICE_ERR_TIMEOUT, so a peer that died or hangs
 * never leaves this rank waiting for ever. A failure the communicator reports asynchronously
 * (a peer's network error) ends the wait early with CUTOVER_CLUSTER_DEVICE_ERR_DEVICE.
 *
 * Thread-safety: one thread calls everything between init_rank and destroy.
 */
#ifndef CUTOVER_COMPAT_CLUSTER_DEVICE_API_H_
#define CUTOVER_COMPAT_CLUSTER_DEVICE_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bump on any change to a struct, signature, code or contract below. */
#define CUTOVER_CLUSTER_DEVICE_ABI 1u

#define CUTOVER_CLUSTER_DEVICE_ENTRY_NAME "cutover_cluster_device_entry"

/* The size of the communicator's unique id (ncclUniqueId is 128 bytes). */
#define CUTOVER_CLUSTER_DEVICE_ID_BYTES 128

#define CUTOVER_CLUSTER_DEVICE_OK 0
#define CUTOVER_CLUSTER_DEVICE_ERR_NO_DEVICE 1   /* no usable driver or no visible device */
#define CUTOVER_CLUSTER_DEVICE_ERR_INVALID 2     /* bad argument, or called out of order */
#define CUTOVER_CLUSTER_DEVICE_ERR_DEVICE 3      /* a CUDA or NCCL call failed */
#define CUTOVER_CLUSTER_DEVICE_ERR_TIMEOUT 4     /* the watchdog aborted the communicator */
#define CUTOVER_CLUSTER_DEVICE_ERR_UNSUPPORTED 5 /* an op or placement this side lacks */

typedef struct CutoverClusterDevice {
  uint32_t abi;           /* CUTOVER_CLUSTER_DEVICE_ABI the plugin was built with */
  uint32_t struct_size;   /* sizeof(CutoverClusterDevice) in the plugin's build */
  const char* name;       /* "nccl" */
  const char* build_info; /* one line: the headers it was built against */

  /* The communication library as loaded ("NCCL 2.28.9"). Works before anything else. */
  void (*library_version)(char* out, size_t out_size);
  /* Devices this process sees (CUDA_VISIBLE_DEVICES applied). */
  int (*device_count)(int* out, char* err, size_t err_size);
  /* One line on device `device`: its name and PCI bus id. */
  int (*device_name)(int device, char* out, size_t out_size, char* err, size_t err_size);
  /* A fresh unique id (ncclGetUniqueId), on the one rank that bootstraps the communicator;
   * `out_size` must be CUTOVER_CLUSTER_DEVICE_ID_BYTES. */
  int (*unique_id)(uint8_t* out, size_t out_size, char* err, size_t err_size);
  /* Makes `device` current and joins the communicator of `nranks` ranks named by `id` as
   * `rank` (ncclCommInitRank, non-blocking, under the watchdog of `timeout_s` seconds, which
   * also bounds every later wait). `algo` NULL or "": NCCL chooses its algorithms; else NCCL_ALGO
   * is `algo` while this communicator is set up (and as it was after). Called once, or again
   * after destroy (a second communicator, e.g. the ring pass on two nodes). */
  int (*init_rank)(const uint8_t* id, size_t id_size, int nranks, int rank, int device,
                   double timeout_s, const char* algo, char* err, size_t err_size);
  /* Releases the communicator and buffers; safe after a failed or aborted init and twice. */
  void (*destroy)(void);
  /* One call of `op` (CUTOVER_CLUSTER_ALL_REDUCE ... CUTOVER_CLUSTER_SENDRECV) with host
   * buffers: copies the input to the device, runs the op, waits and copies the result back.
   * The device buffers stay for time_collective. */
  int (*collective)(int op, const float* send, float* recv, uint64_t count, int root, char* err,
                    size_t err_size);
  /* `warmup` untimed then `reps` timed calls of the op of the last `collective` call (same op,
   * count, placement and root, else CUTOVER_CLUSTER_DEVICE_ERR_INVALID), back to back on one
   * stream; rep_s[i]: call i's seconds between CUDA events. */
  int (*time_collective)(int op, int in_place, uint64_t count, int root, int warmup, int reps,
                         double* rep_s, char* err, size_t err_size);
  /* `bytes` (at least 1 travels) from a device buffer to `peer`, or into one from `peer`;
   * returns when the device finished its part. */
  int (*send)(uint64_t bytes, int peer, char* err, size_t err_size);
  int (*recv)(uint64_t bytes, int peer, char* err, size_t err_size);
} CutoverClusterDevice;

typedef const CutoverClusterDevice* (*CutoverClusterDeviceEntryFn)(uint32_t host_abi);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CUTOVER_COMPAT_CLUSTER_DEVICE_API_H_ */
