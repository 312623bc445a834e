/* A fake compat backend plugin, built in C (which also checks that compat/plugin_api.h is plain
 * C) into several shared libraries that differ by one compile definition:
 *   (none)                a valid plugin of this header's ABI; CUTOVER_FAKE_DEVICES=<n> gives it
 *                         n fake devices, otherwise init fails like a host without a driver.
 *                         It runs two ops on the CPU so the host side can be tested end to end
 *                         without a GPU (never in place of the real plugin on one): "copy"
 *                         (fp32, y = x) and "gemm" (fp32, row-major C = A B, a plain triple
 *                         loop with float accumulation), and "all_reduce" and "all_gather"
 *                         (fp32) over its n fake devices with compat/device_runner.h's send
 *                         values x0[i] * (r + 1); gemm of fp8_e4m3 is "not applicable",
 *                         anything else "unsupported". Times come from CLOCK_MONOTONIC;
 *                         CUTOVER_FAKE_FLIP_LAST=1 changes one bit of the last run's output so
 *                         the determinism check can be seen to fail;
 *   CUTOVER_FAKE_ABI=<n>  a table that claims ABI n;
 *   CUTOVER_FAKE_SMALL    a table whose struct_size is too small;
 *   CUTOVER_FAKE_NO_ENTRY no entry point at all.
 * Thread-safety: none needed; the tests call it from one thread. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "compat/plugin_api.h"

#ifndef CUTOVER_FAKE_ABI
#define CUTOVER_FAKE_ABI CUTOVER_COMPAT_PLUGIN_ABI
#endif

static int g_devices = 0;

static int Fail(int code, char* err, size_t err_size, const char* text) {
  if (err != NULL && err_size > 0) snprintf(err, err_size, "%s", text);
  return code;
}

static int FakeInit(char* err, size_t err_size) {
  const char* n = getenv("CUTOVER_FAKE_DEVICES");
  g_devices = n != NULL ? atoi(n) : 0;
  if (g_devices <= 0) {
    g_devices = 0;
    return Fail(CUTOVER_COMPAT_ERR_NO_DRIVER, err, err_size,
                "no CUDA driver: the fake plugin has none");
  }
  return CUTOVER_COMPAT_OK;
}

static void FakeShutdown(void) { g_devices = 0; }

static int FakeDeviceCount(void) { return g_devices; }

static int FakeDeviceInfo(int ordinal, CutoverCompatDeviceInfo* out, char* err, size_t err_size) {
  if (ordinal < 0 || ordinal >= g_devices || out == NULL) {
    return Fail(CUTOVER_COMPAT_ERR_INVALID, err, err_size, "fake: no such device");
  }
  memset(out, 0, sizeof(*out));
  out->struct_size = sizeof(*out);
  out->ordinal = ordinal;
  snprintf(out->name, sizeof(out->name), "Fake GPU %d", ordinal);
  out->cc_major = 9;
  out->cc_minor = 0;
  out->total_memory = (uint64_t)80 << 30;
  out->sm_count = 132;
  snprintf(out->pci_bus_id, sizeof(out->pci_bus_id), "0000:%02x:00.0", 0x10 + ordinal);
  return CUTOVER_COMPAT_OK;
}

static int FakeLibraryVersions(CutoverCompatLibraryVersions* out, char* err, size_t err_size) {
  (void)err;
  (void)err_size;
  memset(out, 0, sizeof(*out));
  out->struct_size = sizeof(*out);
  out->cuda_runtime = 13000;
  out->cuda_driver = g_devices > 0 ? 13010 : 0;
  out->cublas_major = 13;
  out->cublas_minor = 1;
  out->cublas_patch = 0;
  out->cublaslt = 130100;
  out->cudnn = 91900;
  out->nccl = 22809;
  return CUTOVER_COMPAT_OK;
}

static double NowMs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* One run of a fake collective over g_devices ranks (out: rank 0's receive buffer). */
static void FakeCollective(const CutoverCompatCase* c, float* out) {
  const uint64_t count = c->inputs[0].count;
  const float* x = c->inputs[0].data;
  if (strcmp(c->op, "all_gather") == 0) {
    for (int r = 0; r < g_devices; ++r) {
      for (uint64_t i = 0; i < count; ++i) out[r * count + i] = x[i] * (float)(r + 1);
    }
    return;
  }
  for (uint64_t i = 0; i < count; ++i) {
    float s = 0.0f;
    for (int r = 0; r < g_devices; ++r) s += x[i] * (float)(r + 1);
    out[i] = s;
  }
}

/* One run of the case's op into out (c->output_count elements checked by the caller). */
static void FakeOnce(const CutoverCompatCase* c, int is_gemm, float* out) {
  if (strcmp(c->op, "all_reduce") == 0 || strcmp(c->op, "all_gather") == 0) {
    FakeCollective(c, out);
    return;
  }
  if (!is_gemm) {
    memcpy(out, c->inputs[0].data, c->inputs[0].count * sizeof(float));
    return;
  }
  const int64_t m = c->shape[0], n = c->shape[1], k = c->shape[2];
  const float* a = c->inputs[0].data;
  const float* b = c->inputs[1].data;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float s = 0.0f;
      for (int64_t p = 0; p < k; ++p) s += a[i * k + p] * b[p * n + j];
      out[i * n + j] = s;
    }
  }
}

static int FakeRunCase(const CutoverCompatCase* c, CutoverCompatCaseResult* result, char* err,
                       size_t err_size) {
  if (g_devices <= 0)
    return Fail(CUTOVER_COMPAT_ERR_NOT_INITIALIZED, err, err_size, "fake: no init");
  if (c == NULL || result == NULL || c->op == NULL || c->dtype == NULL || c->rep_ms == NULL ||
      c->reps < 1) {
    return Fail(CUTOVER_COMPAT_ERR_INVALID, err, err_size, "fake: bad case");
  }
  const int is_gemm = strcmp(c->op, "gemm") == 0;
  const int is_coll = strcmp(c->op, "all_reduce") == 0 || strcmp(c->op, "all_gather") == 0;
  if (!is_gemm && !is_coll && strcmp(c->op, "copy") != 0) {
    char text[128];
    snprintf(text, sizeof(text), "fake: no op '%s'", c->op);
    return Fail(CUTOVER_COMPAT_ERR_UNSUPPORTED, err, err_size, text);
  }
  if (is_gemm && strcmp(c->dtype, "fp8_e4m3") == 0) {
    return Fail(CUTOVER_COMPAT_ERR_NOT_APPLICABLE, err, err_size,
                "fake: fp8 gemm needs compute capability 8.9");
  }
  if (strcmp(c->dtype, "fp32") != 0) {
    return Fail(CUTOVER_COMPAT_ERR_UNSUPPORTED, err, err_size, "fake: fp32 only");
  }
  uint64_t need = 0;
  if (is_gemm) {
    if (c->shape_count != 3 || c->input_count != 2 ||
        c->inputs[0].count != (uint64_t)(c->shape[0] * c->shape[2]) ||
        c->inputs[1].count != (uint64_t)(c->shape[2] * c->shape[1])) {
      return Fail(CUTOVER_COMPAT_ERR_INVALID, err, err_size, "fake: gemm inputs do not fit");
    }
    need = (uint64_t)(c->shape[0] * c->shape[1]);
  } else {
    if (c->input_count != 1) {
      return Fail(CUTOVER_COMPAT_ERR_INVALID, err, err_size, "fake: takes one input");
    }
    need = c->inputs[0].count;
    if (strcmp(c->op, "all_gather") == 0) need *= (uint64_t)g_devices;
  }
  if (c->output == NULL || c->output_count < need) {
    return Fail(CUTOVER_COMPAT_ERR_INVALID, err, err_size, "fake: output too small");
  }
  float* last = (float*)malloc(need * sizeof(float) + 1);
  if (last == NULL) return Fail(CUTOVER_COMPAT_ERR_INTERNAL, err, err_size, "fake: out of memory");
  FakeOnce(c, is_gemm, c->output);
  for (int i = 0; i < c->warmup; ++i) FakeOnce(c, is_gemm, last);
  for (int i = 0; i < c->reps; ++i) {
    double t0 = NowMs();
    FakeOnce(c, is_gemm, last);
    c->rep_ms[i] = NowMs() - t0;
  }
  const char* flip = getenv("CUTOVER_FAKE_FLIP_LAST");
  if (flip != NULL && strcmp(flip, "1") == 0 && need > 0) {
    uint32_t bits;
    memcpy(&bits, &last[0], sizeof(bits));
    bits ^= 1u;
    memcpy(&last[0], &bits, sizeof(bits));
  }
  memset(result, 0, sizeof(*result));
  result->struct_size = sizeof(*result);
  result->deterministic = memcmp(last, c->output, need * sizeof(float)) == 0;
  result->ranks = is_coll ? g_devices : 1;
  result->output_written = need;
  result->rotation_copies = 1;
  snprintf(result->detail, sizeof(result->detail), "fake: on the CPU");
  free(last);
  return CUTOVER_COMPAT_OK;
}

/* Measures a host memcpy of 16 MiB, so the numbers are real but say nothing about a GPU. */
static int FakeCalibrate(int device, CutoverCompatCalibration* out, char* err, size_t err_size) {
  if (device < 0 || device >= g_devices || out == NULL) {
    return Fail(CUTOVER_COMPAT_ERR_INVALID, err, err_size, "fake: no such device");
  }
  const size_t bytes = (size_t)16 << 20;
  char* a = (char*)malloc(bytes);
  char* b = (char*)malloc(bytes);
  if (a == NULL || b == NULL) {
    free(a);
    free(b);
    return Fail(CUTOVER_COMPAT_ERR_INTERNAL, err, err_size, "fake: out of memory");
  }
  memset(a, 1, bytes);
  memset(b, 0, bytes);
  double t0 = NowMs();
  memcpy(b, a, bytes);
  double ms = NowMs() - t0;
  memset(out, 0, sizeof(*out));
  out->struct_size = sizeof(*out);
  out->copy_bytes = bytes;
  out->copy_kernel_gbps = ms > 0 ? 2.0 * (double)bytes / (ms * 1e-3) / 1e9 : 0;
  out->memcpy_gbps = out->copy_kernel_gbps;
  out->gemm_size = 0;
  out->gemm_bf16_tflops = 0;
  out->gemm_fp32_tflops = 0;
  out->copy_kernel_gbps += b[bytes - 1] == 1 ? 0.0 : -1.0; /* keep the copy from being dropped */
  free(a);
  free(b);
  return CUTOVER_COMPAT_OK;
}

static const CutoverCompatPlugin kFake = {
    CUTOVER_FAKE_ABI,
#ifdef CUTOVER_FAKE_SMALL
    16,
#else
    sizeof(CutoverCompatPlugin),
#endif
    "fake",
    "fake plugin for tests",
    FakeInit,
    FakeShutdown,
    FakeDeviceCount,
    FakeDeviceInfo,
    FakeLibraryVersions,
    FakeRunCase,
    FakeCalibrate,
};

#ifndef CUTOVER_FAKE_NO_ENTRY
CUTOVER_COMPAT_PLUGIN_EXPORT const CutoverCompatPlugin* cutover_compat_plugin_entry(
    uint32_t host_abi) {
  (void)host_abi;
  return &kFake;
}
#else
/* Something exported, so the library is not empty. */
CUTOVER_COMPAT_PLUGIN_EXPORT const CutoverCompatPlugin* some_other_symbol(void) { return &kFake; }
#endif
