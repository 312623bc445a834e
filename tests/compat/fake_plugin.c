/* A fake compat backend plugin, built in C (which also checks that compat/plugin_api.h is plain
 * C) into several shared libraries that differ by one compile definition:
 *   (none)                a valid ABI-1 plugin; CUTOVER_FAKE_DEVICES=<n> gives it n fake
 *                         devices, otherwise init fails like a host without a driver;
 *   CUTOVER_FAKE_ABI=<n>  a table that claims ABI n;
 *   CUTOVER_FAKE_SMALL    a table whose struct_size is too small;
 *   CUTOVER_FAKE_NO_ENTRY no entry point at all.
 * Thread-safety: none needed; the tests call it from one thread. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static int FakeRunCase(const CutoverCompatCase* c, char* err, size_t err_size) {
  (void)c;
  return Fail(CUTOVER_COMPAT_ERR_UNSUPPORTED, err, err_size, "fake: no ops");
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
