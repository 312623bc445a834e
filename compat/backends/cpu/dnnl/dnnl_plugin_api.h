/* The C interface of the oneDNN plugin (libcutover_compat_dnnl.so), which runs the cpu backend's
 * convolution and matmul through oneDNN. It is a plugin, loaded at run time by
 * compat/backends/cpu/libs/dnnl_loader.cc, so that the cutover binary links no oneDNN (its
 * tarball needs nothing but glibc) and a host without libdnnl runs our kernels instead.
 * Bump CUTOVER_DNNL_PLUGIN_ABI on any change of these declarations.
 *
 * Thread-safety: set_threads sets the calling thread's OpenMP team; a kernel runs one call at a
 * time. */
#ifndef CUTOVER_COMPAT_BACKENDS_CPU_DNNL_DNNL_PLUGIN_API_H_
#define CUTOVER_COMPAT_BACKENDS_CPU_DNNL_DNNL_PLUGIN_API_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CUTOVER_DNNL_PLUGIN_ABI 1
#define CUTOVER_DNNL_PLUGIN_ENTRY "cutover_dnnl_plugin"

/* op: 0 conv forward, 1 conv backward data, 2 conv backward filter, 3 matmul. */
typedef struct CutoverDnnlProblem {
  int op;
  int bf16;                                         /* inputs hold bf16 values */
  int nhwc;                                         /* conv layout: 0 NCHW, 1 NHWC */
  int64_t n, c, h, w, k, r, s, stride, pad;         /* conv (compat/backends/cpu/cpu_ops.h) */
  int64_t batch, m, mn, mk;                         /* matmul: batch x [m, mk] * [mk, mn] */
} CutoverDnnlProblem;

typedef struct CutoverDnnlTable {
  int abi; /* CUTOVER_DNNL_PLUGIN_ABI */
  const char* (*version)(void); /* the loaded oneDNN's "2.6.3" */
  const char* (*max_isa)(void); /* the most capable ISA oneDNN will use: "avx512_core_bf16" */
  int (*native_bf16)(void);     /* 1 when that ISA has bf16 instructions */
  void (*set_threads)(int threads);
  /* A prepared kernel, or NULL with the reason in err (NUL-terminated, truncated to size). */
  void* (*create)(const CutoverDnnlProblem* problem, char* err, size_t err_size);
  /* 0 on success; else non-zero with the reason in err. */
  int (*run)(void* kernel, const float* in0, const float* in1, float* out, char* err,
             size_t err_size);
  const char* (*implementation)(void* kernel); /* "brg:avx512_core" */
  void (*destroy)(void* kernel);
} CutoverDnnlTable;

/* The plugin's one exported symbol. */
const CutoverDnnlTable* cutover_dnnl_plugin(void);

#ifdef __cplusplus
}
#endif

#endif /* CUTOVER_COMPAT_BACKENDS_CPU_DNNL_DNNL_PLUGIN_API_H_ */
