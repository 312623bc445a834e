// The oneDNN plugin (dnnl_plugin_api.h): convolution and matmul of the cpu backend through
// oneDNN (built when CMake finds libdnnl). oneDNN's C++ API throws dnnl::error: every call that
// may throw is caught here and becomes an error text; nothing crosses the C interface but C
// types. Primitives take the layouts oneDNN prefers ("any"); our float32 buffers are reordered
// in and out on each run, as a framework's plain tensors are.
#include <omp.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <unordered_map>

#include <oneapi/dnnl/dnnl.hpp>

#include "compat/backends/cpu/dnnl/dnnl_plugin_api.h"

namespace {

using dnnl::memory;
using Dims = memory::dims;
using Tag = memory::format_tag;
using Dt = memory::data_type;

std::string IsaName(dnnl_cpu_isa_t isa) {
  switch (isa) {
    case dnnl_cpu_isa_sse41: return "sse41";
    case dnnl_cpu_isa_avx: return "avx";
    case dnnl_cpu_isa_avx2: return "avx2";
    case dnnl_cpu_isa_avx2_vnni: return "avx2_vnni";
    case dnnl_cpu_isa_avx512_core: return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni: return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16: return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx: return "avx512_core_amx";
    default: return "isa " + std::to_string(static_cast<int>(isa));
  }
}

// One operand: our float32 buffer (plain layout) and the primitive's own memory when its
// layout or data type differs (then reordered on each run).
struct Operand {
  memory::desc user;
  memory::desc prim;
  memory own;  // allocated once when prim != user
  int arg = 0;
};

class OneDnnKernel {
 public:
  OneDnnKernel() : engine_(dnnl::engine::kind::cpu, 0), stream_(engine_) {}

  // Sets the primitive and its three operands (inputs 0 and 1, output), allocating the
  // primitive-layout buffers.
  void Bind(dnnl::primitive prim, std::string impl, Operand in0, Operand in1, Operand out) {
    prim_ = std::move(prim);
    impl_ = std::move(impl);
    ops_[0] = std::move(in0);
    ops_[1] = std::move(in1);
    ops_[2] = std::move(out);
    for (Operand& o : ops_) {
      if (o.prim != o.user) o.own = memory(o.prim, engine_);
    }
  }
  const dnnl::engine& engine() const { return engine_; }

  // Throws dnnl::error.
  void Run(const float* in0, const float* in1, float* out) {
    {
      float* ptrs[3] = {const_cast<float*>(in0), const_cast<float*>(in1), out};
      std::unordered_map<int, memory> args;
      memory user_out;
      for (int i = 0; i < 3; ++i) {
        Operand& o = ops_[i];
        memory user(o.user, engine_, ptrs[i]);
        if (o.prim == o.user) {
          args[o.arg] = user;
          continue;
        }
        if (i < 2) dnnl::reorder(user, o.own).execute(stream_, user, o.own);
        if (i == 2) user_out = user;
        args[o.arg] = o.own;
      }
      prim_.execute(stream_, args);
      if (user_out) dnnl::reorder(ops_[2].own, user_out).execute(stream_, ops_[2].own, user_out);
      stream_.wait();
    }
  }
  const std::string& Implementation() const { return impl_; }

 private:
  dnnl::engine engine_;
  dnnl::stream stream_;
  dnnl::primitive prim_;
  std::string impl_;
  Operand ops_[3];
};

Operand MakeOperand(const Dims& dims, Tag tag, const memory::desc& prim, int arg) {
  return {memory::desc(dims, Dt::f32, tag), prim, memory(), arg};
}

void BindConv(const CutoverDnnlProblem& g, OneDnnKernel* k) {
  const bool nhwc = g.nhwc != 0;
  const int64_t P = (g.h + 2 * g.pad - g.r) / g.stride + 1,
                Q = (g.w + 2 * g.pad - g.s) / g.stride + 1;
  const Dims x{g.n, g.c, g.h, g.w}, w{g.k, g.c, g.r, g.s}, y{g.n, g.k, P, Q};
  const CutoverDnnlProblem& p = g;
  const Tag act = nhwc ? Tag::nhwc : Tag::nchw, wt = nhwc ? Tag::ohwi : Tag::oihw;
  const Dt in_dt = p.bf16 ? Dt::bf16 : Dt::f32;
  const Dims strides{g.stride, g.stride}, pad{g.pad, g.pad};
  auto any = [](const Dims& d, Dt dt) { return memory::desc(d, dt, Tag::any); };
  const auto algo = dnnl::algorithm::convolution_direct;
  const dnnl::engine& eng = k->engine();
  // The forward descriptor is also the hint the backward ones need.
  dnnl::convolution_forward::primitive_desc fwd(
      dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, algo, any(x, in_dt),
                                      any(w, in_dt), any(y, Dt::f32), strides,
                                      pad, pad),
      eng);
  if (p.op == 0) {
    k->Bind(dnnl::convolution_forward(fwd), fwd.impl_info_str(),
            MakeOperand(x, act, fwd.src_desc(), DNNL_ARG_SRC),
            MakeOperand(w, wt, fwd.weights_desc(), DNNL_ARG_WEIGHTS),
            MakeOperand(y, act, fwd.dst_desc(), DNNL_ARG_DST));
  } else if (p.op == 1) {
    dnnl::convolution_backward_data::primitive_desc bd(
        dnnl::convolution_backward_data::desc(algo, any(x, Dt::f32), any(w, in_dt), any(y, in_dt),
                                              strides, pad, pad),
        eng, fwd);
    k->Bind(dnnl::convolution_backward_data(bd), bd.impl_info_str(),
            MakeOperand(y, act, bd.diff_dst_desc(), DNNL_ARG_DIFF_DST),
            MakeOperand(w, wt, bd.weights_desc(), DNNL_ARG_WEIGHTS),
            MakeOperand(x, act, bd.diff_src_desc(), DNNL_ARG_DIFF_SRC));
  } else {
    dnnl::convolution_backward_weights::primitive_desc bw(
        dnnl::convolution_backward_weights::desc(algo, any(x, in_dt), any(w, Dt::f32),
                                                 any(y, in_dt), strides, pad, pad),
        eng, fwd);
    k->Bind(dnnl::convolution_backward_weights(bw), bw.impl_info_str(),
            MakeOperand(x, act, bw.src_desc(), DNNL_ARG_SRC),
            MakeOperand(y, act, bw.diff_dst_desc(), DNNL_ARG_DIFF_DST),
            MakeOperand(w, wt, bw.diff_weights_desc(), DNNL_ARG_DIFF_WEIGHTS));
  }
}

void BindMatmul(const CutoverDnnlProblem& p, OneDnnKernel* k) {
  const Dims a{p.batch, p.m, p.mk}, b{p.batch, p.mk, p.mn}, c{p.batch, p.m, p.mn};
  const Dt in_dt = p.bf16 ? Dt::bf16 : Dt::f32;
  // Plain row-major operands (a framework's tensors), converted to bf16 when asked.
  dnnl::matmul::primitive_desc pd(
      dnnl::matmul::desc(memory::desc(a, in_dt, Tag::abc), memory::desc(b, in_dt, Tag::abc),
                         memory::desc(c, Dt::f32, Tag::abc)),
      k->engine());
  k->Bind(dnnl::matmul(pd), pd.impl_info_str(),
          MakeOperand(a, Tag::abc, pd.src_desc(), DNNL_ARG_SRC),
          MakeOperand(b, Tag::abc, pd.weights_desc(), DNNL_ARG_WEIGHTS),
          MakeOperand(c, Tag::abc, pd.dst_desc(), DNNL_ARG_DST));
}

void CopyError(const std::string& what, char* err, size_t size) {
  if (err == nullptr || size == 0) return;
  std::snprintf(err, size, "%s", what.c_str());
}

const char* Version() {
  static const std::string v = [] {
    const dnnl_version_t* d = dnnl_version();
    return std::to_string(d->major) + "." + std::to_string(d->minor) + "." +
           std::to_string(d->patch);
  }();
  return v.c_str();
}

const char* MaxIsa() {
  static const std::string isa = IsaName(dnnl_get_effective_cpu_isa());
  return isa.c_str();
}

int NativeBf16() {
  const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
  return isa == dnnl_cpu_isa_avx512_core_bf16 || isa == dnnl_cpu_isa_avx512_core_amx ? 1 : 0;
}

void SetThreads(int threads) { omp_set_num_threads(threads > 0 ? threads : 1); }

void* Create(const CutoverDnnlProblem* problem, char* err, size_t err_size) {
  try {
    auto* k = new OneDnnKernel();
    try {
      if (problem->op == 3) {
        BindMatmul(*problem, k);
      } else {
        BindConv(*problem, k);
      }
    } catch (...) {
      delete k;
      throw;
    }
    return k;
  } catch (const dnnl::error& e) {
    CopyError(std::string("oneDNN: ") + e.what(), err, err_size);
  } catch (const std::exception& e) {
    CopyError(e.what(), err, err_size);
  }
  return nullptr;
}

int Run(void* kernel, const float* in0, const float* in1, float* out, char* err,
        size_t err_size) {
  try {
    static_cast<OneDnnKernel*>(kernel)->Run(in0, in1, out);
    return 0;
  } catch (const dnnl::error& e) {
    CopyError(std::string("oneDNN: ") + e.what(), err, err_size);
  } catch (const std::exception& e) {
    CopyError(e.what(), err, err_size);
  }
  return 1;
}

const char* Implementation(void* kernel) {
  return static_cast<OneDnnKernel*>(kernel)->Implementation().c_str();
}

void Destroy(void* kernel) { delete static_cast<OneDnnKernel*>(kernel); }

}  // namespace

extern "C" __attribute__((visibility("default"))) const CutoverDnnlTable* cutover_dnnl_plugin() {
  static const CutoverDnnlTable table = {CUTOVER_DNNL_PLUGIN_ABI, Version, MaxIsa, NativeBf16,
                                         SetThreads, Create, Run, Implementation, Destroy};
  return &table;
}
