// The ops of the CUDA compat backend, one function per family, each running a whole case
// through RunTimed (compat/backends/cuda/op_common.h) or, for collectives, its own multi-device
// protocol. Each returns CUTOVER_COMPAT_ERR_UNSUPPORTED for a dtype or layout it lacks,
// CUTOVER_COMPAT_ERR_NOT_APPLICABLE where the device cannot have it, and
// CUTOVER_COMPAT_ERR_INVALID for a shape or input that does not fit.
//
// Thread-safety: as compat/plugin_api.h's run_case (one call at a time).
#ifndef CUTOVER_COMPAT_BACKENDS_CUDA_OPS_H_
#define CUTOVER_COMPAT_BACKENDS_CUDA_OPS_H_

#include "compat/backends/cuda/op_common.h"

namespace cutover::cuda_backend {

// gemm {M, N, K} and gemm_batched {batch, M, N, K} through cuBLASLt (blas_ops.cc).
Outcome RunGemm(DeviceState& dev, const CaseView& v, CutoverCompatCaseResult* result);
// conv2d_fwd, conv2d_bwd_data, conv2d_bwd_filter through cuDNN (dnn_ops.cc).
Outcome RunConv(DeviceState& dev, const CaseView& v, CutoverCompatCaseResult* result);
// sdpa, softmax, layernorm, rmsnorm, reduce_sum, reduce_max, gelu, silu, copy, triad, h2d_copy
// with our kernels (own_ops.cc).
Outcome RunOwn(DeviceState& dev, const CaseView& v, CutoverCompatCaseResult* result);
// True when RunOwn knows `op`.
bool IsOwnOp(const std::string& op);
// all_reduce, all_gather, reduce_scatter, broadcast over every device through NCCL
// (nccl_ops.cc).
bool IsCollective(const std::string& op);
Outcome RunCollective(int device_count, const CaseView& v, CutoverCompatCaseResult* result);
void ReleaseCollectives();

// Times a gemm of synthetic uniform data (calibration): `dtype` "bf16" or "fp32", reps timed
// after warm-up; writes the median rate in TFLOP/s.
Outcome CalibrateGemm(DeviceState& dev, const std::string& dtype, int64_t size, int reps,
                      double* tflops);

}  // namespace cutover::cuda_backend

#endif  // CUTOVER_COMPAT_BACKENDS_CUDA_OPS_H_
