/* The MPI cluster plugin (compat/cluster_api.h): thin wrappers over MPI's C API, so that the
 * `cutover` binary (static C++ runtime, no MPI on its link line) can run the cluster suite
 * under mpirun or srun. Written in C: it needs nothing but libmpi and libc. Built against
 * OpenMPI 4 (Debian's libopenmpi-dev); other MPIs are not claimed. */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include <mpi.h>

#include "compat/cluster_api.h"

#define EXPORT __attribute__((visibility("default")))

static int g_initialized = 0;

static void SetErr(char* err, size_t err_size, const char* what, int rc) {
  if (err == NULL || err_size == 0) return;
  char text[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  if (rc != MPI_SUCCESS && MPI_Error_string(rc, text, &len) != MPI_SUCCESS) text[0] = '\0';
  snprintf(err, err_size, "%s: %s", what, text[0] ? text : "failed");
}

static int Fail(char* err, size_t err_size, const char* what, int rc) {
  SetErr(err, err_size, what, rc);
  return CUTOVER_CLUSTER_ERR_COMM;
}

static int Invalid(char* err, size_t err_size, const char* what) {
  if (err != NULL && err_size > 0) snprintf(err, err_size, "%s", what);
  return CUTOVER_CLUSTER_ERR_INVALID;
}

static int Init(char* err, size_t err_size) {
  if (g_initialized) return Invalid(err, err_size, "MPI already initialized");
  int rc = MPI_Init(NULL, NULL);
  if (rc != MPI_SUCCESS) {
    SetErr(err, err_size, "MPI_Init", rc);
    return CUTOVER_CLUSTER_ERR_INIT;
  }
  /* Errors come back as codes, not as an abort inside MPI. */
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  g_initialized = 1;
  return CUTOVER_CLUSTER_OK;
}

static void Finalize(void) {
  if (g_initialized) MPI_Finalize();
  g_initialized = 0;
}

static void AbortJob(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

static int Rank(void) {
  int r = -1;
  if (g_initialized) MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

static int Size(void) {
  int n = 0;
  if (g_initialized) MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

static void LibraryVersion(char* out, size_t out_size) {
  if (out == NULL || out_size == 0) return;
  char v[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int len = 0;
  if (MPI_Get_library_version(v, &len) != MPI_SUCCESS) v[0] = '\0';
  char* nl = strchr(v, '\n');
  if (nl != NULL) *nl = '\0';
  char* comma = strchr(v, ',');  /* "Open MPI v4.1.4, package: ..." -> "Open MPI v4.1.4" */
  if (comma != NULL) *comma = '\0';
  snprintf(out, out_size, "%s", v);
}

static double Wtime(void) { return MPI_Wtime(); }

static int Barrier(char* err, size_t err_size) {
  int rc = MPI_Barrier(MPI_COMM_WORLD);
  return rc == MPI_SUCCESS ? CUTOVER_CLUSTER_OK : Fail(err, err_size, "MPI_Barrier", rc);
}

static int Collective(int op, const float* send, float* recv, uint64_t count, int root,
                      char* err, size_t err_size) {
  if (recv == NULL) return Invalid(err, err_size, "null receive buffer");
  if (count > (uint64_t)INT_MAX) return Invalid(err, err_size, "count above INT_MAX");
  const int c = (int)count;
  const void* in = send != NULL ? (const void*)send : MPI_IN_PLACE;
  int rc = MPI_SUCCESS;
  const char* what = "";
  switch (op) {
    case CUTOVER_CLUSTER_ALL_REDUCE:
      what = "MPI_Allreduce";
      rc = MPI_Allreduce(in, recv, c, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      break;
    case CUTOVER_CLUSTER_ALL_GATHER:
      what = "MPI_Allgather";
      rc = send != NULL ? MPI_Allgather(send, c, MPI_FLOAT, recv, c, MPI_FLOAT, MPI_COMM_WORLD)
                        : MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, c, MPI_FLOAT,
                                        MPI_COMM_WORLD);
      break;
    case CUTOVER_CLUSTER_REDUCE_SCATTER:
      what = "MPI_Reduce_scatter_block";
      rc = MPI_Reduce_scatter_block(in, recv, c, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      break;
    case CUTOVER_CLUSTER_ALLTOALL:
      what = "MPI_Alltoall";
      rc = send != NULL ? MPI_Alltoall(send, c, MPI_FLOAT, recv, c, MPI_FLOAT, MPI_COMM_WORLD)
                        : MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, recv, c, MPI_FLOAT,
                                       MPI_COMM_WORLD);
      break;
    case CUTOVER_CLUSTER_BROADCAST:
      what = "MPI_Bcast";
      rc = MPI_Bcast(recv, c, MPI_FLOAT, root, MPI_COMM_WORLD);
      break;
    default:
      return Invalid(err, err_size, "unknown collective");
  }
  return rc == MPI_SUCCESS ? CUTOVER_CLUSTER_OK : Fail(err, err_size, what, rc);
}

static int Send(const void* buf, uint64_t bytes, int peer, char* err, size_t err_size) {
  if (bytes > (uint64_t)INT_MAX) return Invalid(err, err_size, "message above INT_MAX bytes");
  int rc = MPI_Send(buf, (int)bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD);
  return rc == MPI_SUCCESS ? CUTOVER_CLUSTER_OK : Fail(err, err_size, "MPI_Send", rc);
}

static int Recv(void* buf, uint64_t bytes, int peer, char* err, size_t err_size) {
  if (bytes > (uint64_t)INT_MAX) return Invalid(err, err_size, "message above INT_MAX bytes");
  int rc = MPI_Recv(buf, (int)bytes, MPI_BYTE, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return rc == MPI_SUCCESS ? CUTOVER_CLUSTER_OK : Fail(err, err_size, "MPI_Recv", rc);
}

static int SendRecv(const void* send, uint64_t send_bytes, int dest, void* recv,
                    uint64_t recv_bytes, int source, char* err, size_t err_size) {
  if (send_bytes > (uint64_t)INT_MAX || recv_bytes > (uint64_t)INT_MAX) {
    return Invalid(err, err_size, "message above INT_MAX bytes");
  }
  int rc = MPI_Sendrecv(send, (int)send_bytes, MPI_BYTE, dest, 0, recv, (int)recv_bytes,
                        MPI_BYTE, source, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return rc == MPI_SUCCESS ? CUTOVER_CLUSTER_OK : Fail(err, err_size, "MPI_Sendrecv", rc);
}

static int AllgatherBytes(const void* send, uint64_t bytes, void* recv, char* err,
                          size_t err_size) {
  if (bytes > (uint64_t)INT_MAX) return Invalid(err, err_size, "block above INT_MAX bytes");
  int rc = MPI_Allgather(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, MPI_COMM_WORLD);
  return rc == MPI_SUCCESS ? CUTOVER_CLUSTER_OK : Fail(err, err_size, "MPI_Allgather", rc);
}

static int AllreduceF64(const double* send, double* recv, uint64_t count, int reduction,
                        char* err, size_t err_size) {
  if (count > (uint64_t)INT_MAX) return Invalid(err, err_size, "count above INT_MAX");
  MPI_Op op = reduction == CUTOVER_CLUSTER_MIN   ? MPI_MIN
              : reduction == CUTOVER_CLUSTER_MAX ? MPI_MAX
                                                 : MPI_SUM;
  const void* in = send == recv ? MPI_IN_PLACE : (const void*)send;
  int rc = MPI_Allreduce(in, recv, (int)count, MPI_DOUBLE, op, MPI_COMM_WORLD);
  return rc == MPI_SUCCESS ? CUTOVER_CLUSTER_OK : Fail(err, err_size, "MPI_Allreduce", rc);
}

#define CUTOVER_STR2(x) #x
#define CUTOVER_STR(x) CUTOVER_STR2(x)
#ifdef OMPI_MAJOR_VERSION
#define CUTOVER_MPI_BUILD \
  "built against Open MPI " CUTOVER_STR(OMPI_MAJOR_VERSION) "." CUTOVER_STR( \
      OMPI_MINOR_VERSION) "." CUTOVER_STR(OMPI_RELEASE_VERSION) " headers (MPI " CUTOVER_STR(MPI_VERSION) "." CUTOVER_STR(MPI_SUBVERSION) ")"
#else
#define CUTOVER_MPI_BUILD \
  "built against MPI " CUTOVER_STR(MPI_VERSION) "." CUTOVER_STR(MPI_SUBVERSION) " headers"
#endif

static const CutoverClusterPlugin kPlugin = {
    CUTOVER_CLUSTER_PLUGIN_ABI,
    sizeof(CutoverClusterPlugin),
    "mpi",
    CUTOVER_MPI_BUILD,
    Init,
    Finalize,
    AbortJob,
    Rank,
    Size,
    LibraryVersion,
    Wtime,
    Barrier,
    Collective,
    Send,
    Recv,
    SendRecv,
    AllgatherBytes,
    AllreduceF64,
};

EXPORT const CutoverClusterPlugin* cutover_cluster_plugin_entry(uint32_t host_abi) {
  (void)host_abi;
  return &kPlugin;
}
