// A stand-in for libnvidia-ml.so.1 and libcuda.so.1 with one fixed GPU, for tests of the live
// driver query on machines without a GPU. FAKE_NVML_HANG=1 makes nvmlInit_v2 hang;
// FAKE_NVML_INIT_FAIL=1 makes it fail with NVML_ERROR_DRIVER_NOT_LOADED (9).
// nvmlDeviceGetVbiosVersion is deliberately absent (an optional symbol).
// It also stands in for a CUDA runtime that `probe collect --deep` loads in a child:
// cudaRuntimeGetVersion says 12.4; FAKE_LIB_CRASH_ON_LOAD=1 makes loading it die of SIGSEGV and
// FAKE_LIB_HANG_ON_LOAD=1 makes loading it hang.
#include <signal.h>
#include <unistd.h>
#include <cstdlib>
#include <cstring>

extern "C" {

struct FakeDevice {
  int unused;
};
static FakeDevice g_device;

struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
struct nvmlMemory_t {
  unsigned long long total, free, used;
};

int nvmlInit_v2() {
  if (std::getenv("FAKE_NVML_HANG") != nullptr) {
    for (;;) ::pause();
  }
  if (std::getenv("FAKE_NVML_INIT_FAIL") != nullptr) return 9;
  return 0;
}
int nvmlShutdown() { return 0; }
const char* nvmlErrorString(int rc) { return rc == 9 ? "Driver Not Loaded" : "Unknown Error"; }
int nvmlSystemGetDriverVersion(char* buf, unsigned len) {
  std::strncpy(buf, "550.54.14", len);
  return 0;
}
int nvmlSystemGetCudaDriverVersion_v2(int* v) {
  *v = 12040;
  return 0;
}
int nvmlDeviceGetCount_v2(unsigned* n) {
  *n = 1;
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned i, FakeDevice** d) {
  if (i != 0) return 2;
  *d = &g_device;
  return 0;
}
int nvmlDeviceGetName(FakeDevice*, char* buf, unsigned len) {
  std::strncpy(buf, "NVIDIA H100 80GB HBM3", len);
  return 0;
}
int nvmlDeviceGetUUID(FakeDevice*, char* buf, unsigned len) {
  std::strncpy(buf, "GPU-5f4fe0b5-b1f4-6d4c-0d1f-8a1c5e8a3b31", len);
  return 0;
}
int nvmlDeviceGetPciInfo_v3(FakeDevice*, nvmlPciInfo_t* p) {
  std::memset(p, 0, sizeof(*p));
  p->bus = 0x18;
  p->pciDeviceId = 0x233010de;
  std::strcpy(p->busId, "00000000:18:00.0");
  return 0;
}
int nvmlDeviceGetCudaComputeCapability(FakeDevice*, int* major, int* minor) {
  *major = 9;
  *minor = 0;
  return 0;
}
int nvmlDeviceGetMemoryInfo(FakeDevice*, nvmlMemory_t* m) {
  m->total = 81559ULL * 1024 * 1024;
  m->free = m->total;
  m->used = 0;
  return 0;
}
int nvmlDeviceGetEccMode(FakeDevice*, int* cur, int* pend) {
  *cur = 1;
  *pend = 1;
  return 0;
}
int nvmlDeviceGetTotalEccErrors(FakeDevice*, int type, int counter, unsigned long long* n) {
  if (type != 1) return 3;
  *n = counter == 0 ? 0 : 2;
  return 0;
}
int nvmlDeviceGetRemappedRows(FakeDevice*, unsigned* corr, unsigned* unc, unsigned* pending,
                              unsigned* failure) {
  *corr = 0;
  *unc = 1;
  *pending = 1;
  *failure = 0;
  return 0;
}
int nvmlDeviceGetMigMode(FakeDevice*, unsigned* cur, unsigned* pend) {
  *cur = 0;
  *pend = 0;
  return 0;
}
int nvmlDeviceGetCurrPcieLinkGeneration(FakeDevice*, unsigned* v) {
  *v = 5;
  return 0;
}
int nvmlDeviceGetMaxPcieLinkGeneration(FakeDevice*, unsigned* v) {
  *v = 5;
  return 0;
}
int nvmlDeviceGetCurrPcieLinkWidth(FakeDevice*, unsigned* v) {
  *v = 8;
  return 0;
}
int nvmlDeviceGetMaxPcieLinkWidth(FakeDevice*, unsigned* v) {
  *v = 16;
  return 0;
}
int nvmlDeviceGetPowerManagementLimit(FakeDevice*, unsigned* mw) {
  *mw = 700000;
  return 0;
}
int nvmlDeviceGetCurrentClocksEventReasons(FakeDevice*, unsigned long long* r) {
  *r = 0x1 | 0x4;
  return 0;
}
int nvmlDeviceGetPersistenceMode(FakeDevice*, int* m) {
  *m = 1;
  return 0;
}
int nvmlDeviceGetNvLinkState(FakeDevice*, unsigned link, int* active) {
  if (link >= 4) return 3;  // this fake has 4 links
  *active = link != 2;
  return 0;
}

// Two pages retired for single-bit errors, one for a double-bit error, one more pending.
int nvmlDeviceGetRetiredPages_v2(FakeDevice*, int cause, unsigned* count,
                                 unsigned long long* addresses, unsigned long long* timestamps) {
  unsigned have = cause == 0 ? 2 : cause == 1 ? 1 : 0;
  if (cause > 1) return 2;  // NVML_ERROR_INVALID_ARGUMENT
  if (*count < have) {
    *count = have;
    return have == 0 ? 0 : 7;  // NVML_ERROR_INSUFFICIENT_SIZE
  }
  for (unsigned i = 0; i < have; ++i) {
    if (addresses != nullptr) addresses[i] = 0x1000 * (i + 1);
    if (timestamps != nullptr) timestamps[i] = 1700000000 + i;
  }
  *count = have;
  return 0;
}
int nvmlDeviceGetRetiredPagesPendingStatus(FakeDevice*, int* pending) {
  *pending = 1;
  return 0;
}
int nvmlDeviceGetVirtualizationMode(FakeDevice*, int* mode) {
  *mode = 1;  // NVML_GPU_VIRTUALIZATION_MODE_PASSTHROUGH
  return 0;
}

int cudaRuntimeGetVersion(int* v) {
  *v = 12040;
  return 0;
}

__attribute__((constructor)) static void FakeLibOnLoad() {
  if (std::getenv("FAKE_LIB_CRASH_ON_LOAD") != nullptr) {
    // The default action, whatever handler the process installed (AddressSanitizer's would turn
    // the crash into its report and an exit status): the loader dies by SIGSEGV.
    ::signal(SIGSEGV, SIG_DFL);
    ::raise(SIGSEGV);
  }
  if (std::getenv("FAKE_LIB_HANG_ON_LOAD") != nullptr) {
    for (;;) ::pause();
  }
}

int cuDriverGetVersion(int* v) {
  *v = 12040;
  return 0;
}

}  // extern "C"
