/* The compat cluster plugin interface: a plain C ABI between the `cutover` binary and the MPI
 * plugin (libcutover_compat_mpi.so, built from compat/backends/mpi/mpi_plugin.c against OpenMPI 4
 * from Debian).
 *
 * The binary links no MPI. It dlopens the plugin (RTLD_NOW | RTLD_GLOBAL: OpenMPI's own
 * components are shared objects that dlopen libmpi's symbols back) only for
 * `compat run --suite cluster`, after the launcher was recognised from the environment
 * (compat/cluster_launcher.h), dlsyms CUTOVER_CLUSTER_PLUGIN_ENTRY_NAME and checks the table's
 * `abi` and `struct_size` before calling anything in it.
 *
 * Conventions of every call (as compat/plugin_api.h):
 *  - Functions return CUTOVER_CLUSTER_OK (0) or a CUTOVER_CLUSTER_ERR_* code, and on an error
 *    write a one-line NUL-terminated reason into `err` (capacity `err_size`, truncated).
 *  - Buffers are caller-owned host memory; byte counts are uint64_t but must fit an int (MPI).
 *  - Collectives are over every rank of the world and must be called by all of them in the
 *    same order (MPI's rule).
 *
 * Thread-safety: one thread calls everything, between init and finalize (MPI_THREAD_SINGLE).
 */
#ifndef CUTOVER_COMPAT_CLUSTER_API_H_
#define CUTOVER_COMPAT_CLUSTER_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bump on any change to a struct, signature, code or contract below. */
#define CUTOVER_CLUSTER_PLUGIN_ABI 1u

#define CUTOVER_CLUSTER_PLUGIN_ENTRY_NAME "cutover_cluster_plugin_entry"

#define CUTOVER_CLUSTER_OK 0
#define CUTOVER_CLUSTER_ERR_INIT 1     /* MPI_Init failed or was called twice */
#define CUTOVER_CLUSTER_ERR_INVALID 2  /* bad argument (null buffer, count too large, peer) */
#define CUTOVER_CLUSTER_ERR_COMM 3     /* an MPI call failed */

/* The collectives of the cluster suite, on float32 with sum where they reduce. `count` is the
 * element count nccl-tests uses for each: all_reduce and broadcast `count` in and out;
 * all_gather `count` in, n*count out; reduce_scatter n*count in, `count` out; alltoall n*count
 * in and out (blocks of `count`). */
#define CUTOVER_CLUSTER_ALL_REDUCE 0
#define CUTOVER_CLUSTER_ALL_GATHER 1
#define CUTOVER_CLUSTER_REDUCE_SCATTER 2
#define CUTOVER_CLUSTER_ALLTOALL 3
#define CUTOVER_CLUSTER_BROADCAST 4
/* The ring of sendrecv: `count` to rank + 1 while `count` come from rank - 1. Not a code of
 * `collective` below (the MPI side has sendrecv); the device side takes it
 * (compat/cluster_device_api.h). */
#define CUTOVER_CLUSTER_SENDRECV 5

/* Reductions of allreduce_f64 (timings and agreement checks). */
#define CUTOVER_CLUSTER_SUM 0
#define CUTOVER_CLUSTER_MIN 1
#define CUTOVER_CLUSTER_MAX 2

typedef struct CutoverClusterPlugin {
  uint32_t abi;           /* CUTOVER_CLUSTER_PLUGIN_ABI the plugin was built with */
  uint32_t struct_size;   /* sizeof(CutoverClusterPlugin) in the plugin's build */
  const char* name;       /* "mpi" */
  const char* build_info; /* one line: the MPI headers it was built against */

  /* MPI_Init. Called once; nothing but library_version may be called before it. */
  int (*init)(char* err, size_t err_size);
  /* MPI_Finalize; safe after a failed init. */
  void (*finalize)(void);
  /* Ends every rank of the job now with `code` (MPI_Abort). */
  void (*abort_job)(int code);
  int (*rank)(void);
  int (*size)(void);
  /* MPI_Get_library_version into out (NUL-terminated, first line only). Works before init. */
  void (*library_version)(char* out, size_t out_size);
  /* Seconds on MPI's clock (MPI_Wtime). */
  double (*wtime)(void);
  int (*barrier)(char* err, size_t err_size);
  /* One collective (CUTOVER_CLUSTER_ALL_REDUCE ...). `send` NULL: in place (MPI_IN_PLACE; the
   * input is where MPI expects it in `recv`: all_gather at recv + rank*count, reduce_scatter
   * all of recv's n*count). broadcast ignores `send` and uses root `root`. */
  int (*collective)(int op, const float* send, float* recv, uint64_t count, int root, char* err,
                    size_t err_size);
  /* Blocking point to point (MPI_Send / MPI_Recv of bytes, tag 0). */
  int (*send)(const void* buf, uint64_t bytes, int peer, char* err, size_t err_size);
  int (*recv)(void* buf, uint64_t bytes, int peer, char* err, size_t err_size);
  /* MPI_Sendrecv of bytes: send to `dest` while receiving from `source`. */
  int (*sendrecv)(const void* send, uint64_t send_bytes, int dest, void* recv,
                  uint64_t recv_bytes, int source, char* err, size_t err_size);
  /* Every rank's `bytes` bytes, in rank order, into recv (n*bytes) on every rank. */
  int (*allgather_bytes)(const void* send, uint64_t bytes, void* recv, char* err,
                         size_t err_size);
  /* `count` doubles reduced with CUTOVER_CLUSTER_SUM/MIN/MAX onto every rank (in place when
   * send == recv). */
  int (*allreduce_f64)(const double* send, double* recv, uint64_t count, int reduction,
                       char* err, size_t err_size);
} CutoverClusterPlugin;

typedef const CutoverClusterPlugin* (*CutoverClusterPluginEntryFn)(uint32_t host_abi);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CUTOVER_COMPAT_CLUSTER_API_H_ */
