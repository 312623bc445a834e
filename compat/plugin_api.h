/* The compat backend plugin interface: a plain C ABI between the `cutover` binary and a backend
 * shared library (libcutover_compat_cuda.so) that may be built by nvcc, g++ or a C compiler.
 *
 * The binary links no NVIDIA library. It dlopens the plugin only when `--backend cuda` is asked
 * for, dlsyms CUTOVER_COMPAT_PLUGIN_ENTRY_NAME, calls it with the ABI it speaks, and checks the
 * returned table's `abi` and `struct_size` before calling any function pointer in it, so a
 * missing, older or newer plugin is refused with a clear message instead of crashing.
 *
 * Conventions of every call:
 *  - Functions return CUTOVER_COMPAT_OK (0) or one of the CUTOVER_COMPAT_ERR_* codes. On an error
 *    they write a one-line, NUL-terminated reason (no newline) into `err` (capacity `err_size`,
 *    truncated to fit; nothing written when err is NULL or err_size is 0).
 *  - Output structs are caller-owned; the caller sets their `struct_size` to sizeof its own
 *    definition and the plugin fills at most that many bytes.
 *  - Strings in the plugin table (name, build_info) are static and live until the plugin is
 *    unloaded.
 *
 * Thread-safety: the entry point, library_versions and device_count may be called from any
 * thread; init and shutdown are called once each, from one thread, with no other call in flight;
 * device_info and run_case may be called concurrently for distinct devices.
 */
#ifndef CUTOVER_COMPAT_PLUGIN_API_H_
#define CUTOVER_COMPAT_PLUGIN_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI version of this header: bump on any change to a struct, a function signature, an
 * error code or a contract below. The host refuses a plugin whose table->abi differs. */
#define CUTOVER_COMPAT_PLUGIN_ABI 1u

/* The one symbol a plugin exports. */
#define CUTOVER_COMPAT_PLUGIN_ENTRY_NAME "cutover_compat_plugin_entry"

#if defined(__GNUC__)
#define CUTOVER_COMPAT_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define CUTOVER_COMPAT_PLUGIN_EXPORT
#endif

/* Return codes. */
#define CUTOVER_COMPAT_OK 0
#define CUTOVER_COMPAT_ERR_NO_DRIVER 1       /* no usable NVIDIA driver (absent or too old) */
#define CUTOVER_COMPAT_ERR_NO_DEVICE 2       /* a driver but no visible device */
#define CUTOVER_COMPAT_ERR_NOT_INITIALIZED 3 /* called before a successful init */
#define CUTOVER_COMPAT_ERR_INVALID 4         /* bad argument (ordinal, null pointer, size) */
#define CUTOVER_COMPAT_ERR_UNSUPPORTED 5     /* op or feature unknown to this plugin */
#define CUTOVER_COMPAT_ERR_DEVICE 6          /* a device call failed (launch, copy, self-check) */
#define CUTOVER_COMPAT_ERR_INTERNAL 7        /* a bug in the plugin */

/* One device as the plugin sees it. */
typedef struct CutoverCompatDeviceInfo {
  uint32_t struct_size;  /* set by the caller: sizeof(CutoverCompatDeviceInfo) */
  int32_t ordinal;       /* the plugin's device index, 0..device_count()-1 */
  char name[256];        /* e.g. "NVIDIA H100 80GB HBM3" */
  int32_t cc_major;      /* compute capability, e.g. 9 */
  int32_t cc_minor;      /* e.g. 0 */
  uint64_t total_memory; /* bytes of device memory */
  int32_t sm_count;      /* multiprocessors */
  char pci_bus_id[32];   /* "0000:3b:00.0" */
} CutoverCompatDeviceInfo;

/* The versions of the libraries the plugin actually loaded (not the headers it was built with;
 * those are in build_info). A version the plugin cannot query is 0. */
typedef struct CutoverCompatLibraryVersions {
  uint32_t struct_size; /* set by the caller: sizeof(CutoverCompatLibraryVersions) */
  int32_t cuda_runtime; /* cudaRuntimeGetVersion: 1000*major + 10*minor, e.g. 13000 */
  int32_t cuda_driver;  /* cudaDriverGetVersion: same encoding; 0 when no driver is loaded */
  int32_t cublas_major; /* cublasGetProperty */
  int32_t cublas_minor;
  int32_t cublas_patch;
  int64_t cublaslt; /* cublasLtGetVersion: 10000*major + 100*minor + patch */
  int64_t cudnn;    /* cudnnGetVersion: 10000*major + 100*minor + patch (cuDNN 9) */
  int32_t nccl;     /* ncclGetVersion: 10000*major + 100*minor + patch (NCCL >= 2.9) */
} CutoverCompatLibraryVersions;

/* The first op hook, to be extended (with an ABI bump) by the compat runner. ABI 1 knows one
 * op, "fill_u32": output[i] = seed + i for i < count, computed by a device kernel and copied to
 * the host buffer `output` (REQUIRES: output_bytes >= 4*count). */
typedef struct CutoverCompatCase {
  uint32_t struct_size; /* sizeof(CutoverCompatCase) */
  const char* op;       /* op name; an unknown one gives CUTOVER_COMPAT_ERR_UNSUPPORTED */
  int32_t device;       /* device ordinal */
  uint64_t count;       /* number of elements */
  uint64_t seed;        /* op-defined input parameter */
  void* output;         /* caller-owned host buffer for the op's result */
  uint64_t output_bytes;
} CutoverCompatCase;

/* The plugin table. The first four fields keep their place in every ABI version so that any
 * host can read a plugin's abi and name, whatever version either speaks. */
typedef struct CutoverCompatPlugin {
  uint32_t abi;           /* CUTOVER_COMPAT_PLUGIN_ABI the plugin was built with */
  uint32_t struct_size;   /* sizeof(CutoverCompatPlugin) in the plugin's build */
  const char* name;       /* backend name, e.g. "cuda" */
  const char* build_info; /* one line: toolkit, header versions, architectures */

  /* Finds the driver and devices and self-checks each device with a kernel. Nothing else but
   * library_versions may be called before it succeeds. Calling it again without
   * shutdown in between is an error. */
  int (*init)(char* err, size_t err_size);
  /* Releases what init acquired. Safe to call after a failed init; last call before unload. */
  void (*shutdown)(void);
  /* Number of devices found by init (0 before init). */
  int (*device_count)(void);
  /* Fills *out for device `ordinal`. */
  int (*device_info)(int ordinal, CutoverCompatDeviceInfo* out, char* err, size_t err_size);
  /* Fills *out; works without a driver or device (and before init). */
  int (*library_versions)(CutoverCompatLibraryVersions* out, char* err, size_t err_size);
  /* Runs one case (see CutoverCompatCase). */
  int (*run_case)(const CutoverCompatCase* c, char* err, size_t err_size);
} CutoverCompatPlugin;

/* The entry point's type. `host_abi` is the ABI the host speaks. The plugin returns its static
 * table (never NULL; it has no side effects), for host_abi when it can serve it, otherwise in its
 * own ABI so the host can name the mismatch. */
typedef const CutoverCompatPlugin* (*CutoverCompatPluginEntryFn)(uint32_t host_abi);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CUTOVER_COMPAT_PLUGIN_API_H_ */
