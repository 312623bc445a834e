// oneDNN through its plugin (dnnl/dnnl_plugin_api.h), loaded on first use: next to the cutover
// binary, in ../lib/cutover/, from $CUTOVER_DNNL_PLUGIN, or where this build wrote it. A plugin
// that is missing or cannot load (no libdnnl on the host) leaves oneDNN unavailable and the
// cases on our kernels; the reason is kept for DnnlInfo().
#include <dlfcn.h>

#include <filesystem>
#include <mutex>

#include "compat/backend_loader.h"
#include "compat/backends/cpu/cpu_libs.h"
#include "compat/backends/cpu/dnnl/dnnl_plugin_api.h"

namespace cutover::cpu {
namespace {

struct Plugin {
  const CutoverDnnlTable* table = nullptr;
  std::string why_not;  // when table is null
};

const Plugin& LoadPlugin() {
  static const Plugin plugin = [] {
    Plugin p;
    LoaderOptions opts;
    opts.env_var = "CUTOVER_DNNL_PLUGIN";
    opts.file_name = "libcutover_compat_dnnl.so";
    std::vector<std::string> candidates = CudaPluginCandidates(opts);
#ifdef CUTOVER_DNNL_PLUGIN_BUILD_PATH
    candidates.push_back(CUTOVER_DNNL_PLUGIN_BUILD_PATH);  // tests run from the build tree
#endif
    std::string tried;
    for (const std::string& path : candidates) {
      std::error_code ec;
      if (!std::filesystem::exists(path, ec)) {
        tried += (tried.empty() ? "" : ", ") + path;
        continue;
      }
      void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle == nullptr) {
        const char* e = ::dlerror();
        p.why_not = path + ": " + (e != nullptr ? e : "cannot load");
        return p;
      }
      using Entry = const CutoverDnnlTable* (*)();
      auto entry = reinterpret_cast<Entry>(::dlsym(handle, CUTOVER_DNNL_PLUGIN_ENTRY));
      const CutoverDnnlTable* t = entry != nullptr ? entry() : nullptr;
      if (t == nullptr || t->abi != CUTOVER_DNNL_PLUGIN_ABI) {
        p.why_not = path + ": not a oneDNN plugin of ABI " +
                    std::to_string(CUTOVER_DNNL_PLUGIN_ABI);
        return p;
      }
      p.table = t;
      return p;
    }
    p.why_not = "oneDNN plugin not found: tried " + tried;
    return p;
  }();
  return plugin;
}

class PluginKernel final : public DnnlKernel {
 public:
  PluginKernel(const CutoverDnnlTable* t, void* k) : t_(t), k_(k), impl_(t->implementation(k)) {}
  ~PluginKernel() override { t_->destroy(k_); }
  PluginKernel(const PluginKernel&) = delete;
  PluginKernel& operator=(const PluginKernel&) = delete;

  Status Run(const float* in0, const float* in1, float* out) override {
    char err[512] = {0};
    if (t_->run(k_, in0, in1, out, err, sizeof(err)) != 0) return Status::Internal(err);
    return Status::Ok();
  }
  const std::string& Implementation() const override { return impl_; }

 private:
  const CutoverDnnlTable* t_;
  void* k_;
  std::string impl_;
};

}  // namespace

LibraryInfo DnnlInfo() {
  LibraryInfo info;
  const Plugin& p = LoadPlugin();
  if (p.table == nullptr) return info;
  info.available = true;
  info.name = "oneDNN";
  info.version = p.table->version();
  info.detail = std::string("max ISA ") + p.table->max_isa();
  return info;
}

void DnnlSetThreads(int threads) {
  const Plugin& p = LoadPlugin();
  if (p.table != nullptr) p.table->set_threads(threads);
}

bool DnnlHasNativeBf16() {
  const Plugin& p = LoadPlugin();
  return p.table != nullptr && p.table->native_bf16() != 0;
}

Result<std::unique_ptr<DnnlKernel>> MakeDnnlKernel(const DnnlProblem& problem) {
  const Plugin& p = LoadPlugin();
  if (p.table == nullptr) return Status::Unavailable(p.why_not);
  CutoverDnnlProblem c{};
  c.op = static_cast<int>(problem.op);
  c.bf16 = problem.bf16 ? 1 : 0;
  c.nhwc = problem.layout == ConvLayout::kNhwc ? 1 : 0;
  const ConvShape& g = problem.conv;
  c.n = g.n, c.c = g.c, c.h = g.h, c.w = g.w, c.k = g.k, c.r = g.r, c.s = g.s;
  c.stride = g.stride, c.pad = g.pad;
  c.batch = problem.batch, c.m = problem.m, c.mn = problem.n, c.mk = problem.k;
  char err[512] = {0};
  void* k = p.table->create(&c, err, sizeof(err));
  if (k == nullptr) return Status::Internal(err);
  return std::unique_ptr<DnnlKernel>(std::make_unique<PluginKernel>(p.table, k));
}

}  // namespace cutover::cpu
