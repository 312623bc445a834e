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
 * device_info may be called from any thread after init; run_case and calibrate from one thread
 * at a time (collectives use every device).
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
#define CUTOVER_COMPAT_PLUGIN_ABI 2u

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
#define CUTOVER_COMPAT_ERR_NOT_APPLICABLE 8  /* the case has no meaning here (fp8 before cc 8.9) */

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

/* One input tensor: float32 values already rounded to the case's dtype by the host (so the
 * plugin's conversion to the device type is exact), in the layout the op defines. */
typedef struct CutoverCompatTensor {
  const float* data; /* host memory, `count` elements */
  uint64_t count;
} CutoverCompatTensor;

/* One case of a compat op (compat/op.h describes each op: shape meaning, inputs, output). The
 * plugin converts the inputs to the device dtype, runs the op `warmup` times untimed and `reps`
 * times timed with CUDA events, rotating among copies of the inputs whose total exceeds the L2
 * cache (so no repetition reads L2-resident inputs), and returns the first run's output
 * converted to float32 (gemm: fp16 -> fp16 output, bf16 -> bf16, fp32/tf32 -> fp32,
 * fp8_e4m3 -> bf16, int8 -> int32; accumulation fp32, int32 for int8). */
typedef struct CutoverCompatCase {
  uint32_t struct_size; /* sizeof(CutoverCompatCase) */
  int32_t device;       /* device ordinal; collectives use every device and ignore it */
  const char* op;       /* "gemm", "conv2d_fwd", ...; unknown: CUTOVER_COMPAT_ERR_UNSUPPORTED */
  const char* dtype;    /* "fp32", "tf32", "fp16", "bf16", "fp8_e4m3", "int8", "u8" */
  const char* layout;   /* op-defined: "row-major", "NCHW", "NHWC", "causal", "pinned", ... */
  const int64_t* shape; /* op-defined dimensions */
  uint32_t shape_count;
  const CutoverCompatTensor* inputs;
  uint32_t input_count;
  float* output; /* caller-owned host buffer */
  uint64_t output_count;
  int32_t warmup; /* untimed runs before the timed ones (>= 0) */
  int32_t reps;   /* timed runs (>= 1) */
  double* rep_ms; /* caller-owned, `reps` entries: each timed run in milliseconds */
} CutoverCompatCase;

/* What run_case learned besides the output and the times. */
typedef struct CutoverCompatCaseResult {
  uint32_t struct_size;     /* set by the caller: sizeof(CutoverCompatCaseResult) */
  int32_t deterministic;    /* 1: the first and the last run's outputs are bit-identical */
  int32_t ranks;            /* devices that took part (collectives: n; others 1) */
  uint64_t output_written;  /* elements written to output (collectives with n > 1 may differ
                               from the single-device count: all_gather n*count) */
  uint64_t rotation_copies; /* input copies the timed runs rotated among */
  char detail[256];         /* one line: library, algorithm, math mode ("cuBLASLt, TF32 off") */
} CutoverCompatCaseResult;

/* The device's own ceilings, measured by calibrate. */
typedef struct CutoverCompatCalibration {
  uint32_t struct_size;    /* set by the caller: sizeof(CutoverCompatCalibration) */
  double copy_kernel_gbps; /* our copy kernel, bytes read + written per second / 1e9 */
  double memcpy_gbps;      /* cudaMemcpyAsync device to device, read + written */
  double gemm_bf16_tflops; /* bf16 8192^3 through the gemm op's cuBLASLt path */
  double gemm_fp32_tflops; /* fp32 (no TF32) 4096^3 */
  uint64_t copy_bytes;     /* bytes of one copy's source */
  int32_t gemm_size;       /* M = N = K of the bf16 GEMM */
} CutoverCompatCalibration;

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
  /* Runs one case (see CutoverCompatCase) and fills *result. CUTOVER_COMPAT_ERR_UNSUPPORTED for
   * an op or dtype this plugin lacks, CUTOVER_COMPAT_ERR_NOT_APPLICABLE for one with no meaning
   * on this device, CUTOVER_COMPAT_ERR_INVALID for a shape, input or buffer that does not fit. */
  int (*run_case)(const CutoverCompatCase* c, CutoverCompatCaseResult* result, char* err,
                  size_t err_size);
  /* Measures the device's copy bandwidth and GEMM rates (a few seconds). */
  int (*calibrate)(int device, CutoverCompatCalibration* out, char* err, size_t err_size);
} CutoverCompatPlugin;

/* The entry point's type. `host_abi` is the ABI the host speaks. The plugin returns its static
 * table (never NULL; it has no side effects), for host_abi when it can serve it, otherwise in its
 * own ABI so the host can name the mismatch. */
typedef const CutoverCompatPlugin* (*CutoverCompatPluginEntryFn)(uint32_t host_abi);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* CUTOVER_COMPAT_PLUGIN_API_H_ */
