// The compat dtypes and their exact rounding, shared by every backend: inputs are generated as
// float32 and rounded here to the case's dtype (so a backend that converts them to its native
// half, bfloat16, tf32 or e4m3 type loses nothing), and the cpu backend rounds its float32
// results here to the op's output dtype. Header-only so that the CUDA plugin can use the very
// same functions on the host without linking the compat library.
//
//   dtype      inputs                                   output     accumulate
//   fp32       float32                                  fp32       fp32
//   tf32       float32 rounded to 10 mantissa bits      fp32       fp32
//   fp16       IEEE binary16, round-to-nearest-even     fp16       fp32
//   bf16       bfloat16, round-to-nearest-even          bf16       fp32
//   fp8_e4m3   E4M3 (no infinities, max 448), RNE, saturating to +-448       bf16  fp32
//   int8       integers in [-127, 127]                  int32      int32 (exact)
//
// All rounding is round-to-nearest-even. fp16, bf16 and tf32 overflow to infinity like IEEE
// conversions; fp8_e4m3 saturates to +-448 (the brief's convention, like cuBLASLt's saturating
// conversions); NaN stays NaN. Subnormals of each format are kept (gradual underflow).
//
// Thread-safety: pure functions.
#ifndef CUTOVER_COMPAT_DTYPE_H_
#define CUTOVER_COMPAT_DTYPE_H_

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string_view>

namespace cutover {

// The floating-point formats: `mant` stored mantissa bits, `emin` the exponent of the smallest
// normal, `max` the largest finite value, `saturate` whether overflow clamps to +-max.
struct FloatFormat {
  int mant = 23;
  int emin = -126;
  double max = 3.4028234663852886e38;
  bool saturate = false;
};

inline constexpr FloatFormat kFp32Format{23, -126, 3.4028234663852886e38, false};
inline constexpr FloatFormat kTf32Format{10, -126, 3.4011621342146535e38, false};
inline constexpr FloatFormat kFp16Format{10, -14, 65504.0, false};
inline constexpr FloatFormat kBf16Format{7, -126, 3.3895313892515355e38, false};
inline constexpr FloatFormat kFp8E4M3Format{3, -6, 448.0, true};

// The format of a floating dtype name ("fp32", "tf32", "fp16", "bf16", "fp8_e4m3"); fp32 for
// any other name.
inline FloatFormat FormatOf(std::string_view dtype) {
  if (dtype == "tf32") return kTf32Format;
  if (dtype == "fp16") return kFp16Format;
  if (dtype == "bf16") return kBf16Format;
  if (dtype == "fp8_e4m3") return kFp8E4M3Format;
  return kFp32Format;
}

// x rounded to nearest-even in format f (exact arithmetic in double).
inline float RoundToFormat(float x, const FloatFormat& f) {
  if (std::isnan(x) || x == 0) return x;
  if (std::isinf(x)) return f.saturate ? static_cast<float>(std::copysign(f.max, x)) : x;
  const double a = std::fabs(static_cast<double>(x));
  int e = 0;
  std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1): the leading bit is 2^(e-1)
  const int lead = std::max(e - 1, f.emin);
  const double quantum = std::ldexp(1.0, lead - f.mant);
  double r = std::nearbyint(a / quantum) * quantum;  // the default mode: to nearest, ties even
  if (r > f.max) r = f.saturate ? f.max : INFINITY;
  return static_cast<float>(std::copysign(r, static_cast<double>(x)));
}

// An int8 input: x rounded to nearest-even and clamped to [-127, 127].
inline float RoundToInt8(float x) {
  if (std::isnan(x)) return 0;
  return static_cast<float>(std::clamp(std::nearbyint(static_cast<double>(x)), -127.0, 127.0));
}

// x rounded to the input format of `dtype` ("int8" included; fp32 and unknown names: x).
inline float RoundInput(float x, std::string_view dtype) {
  if (dtype == "int8") return RoundToInt8(x);
  if (dtype == "fp32" || dtype == "u8") return x;
  return RoundToFormat(x, FormatOf(dtype));
}

// The output dtype of an op computed in `dtype`: fp8_e4m3 -> bf16, int8 -> int32, tf32 -> fp32,
// otherwise the same.
inline std::string_view OutputDtype(std::string_view dtype) {
  if (dtype == "fp8_e4m3") return "bf16";
  if (dtype == "int8") return "int32";
  if (dtype == "tf32") return "fp32";
  return dtype;
}

// A float32 result rounded to the output dtype `out` (fp16, bf16; others unchanged: fp32 is
// already float and an int32 result is converted by the caller).
inline float RoundOutput(float x, std::string_view out) {
  if (out == "fp16" || out == "bf16") return RoundToFormat(x, FormatOf(out));
  return x;
}

// The unit roundoff (half an ulp at 1) of a floating dtype's format: 2^-(mant+1).
inline double UnitRoundoff(std::string_view dtype) {
  if (dtype == "fp64") return 0x1p-53;
  return std::ldexp(1.0, -(FormatOf(dtype).mant + 1));
}

// The signed position of v (a value of format f) among the format's values, so that the ULP
// distance of two values of f is the difference of their positions (+0 and -0 both 0).
inline double FormatPosition(double v, const FloatFormat& f) {
  if (std::isnan(v)) return NAN;
  const double a = std::fabs(v);
  double pos;
  if (std::isinf(a)) {
    pos = std::ldexp(1.0, 40);  // beyond every finite position
  } else if (a < std::ldexp(1.0, f.emin)) {
    pos = a / std::ldexp(1.0, f.emin - f.mant);  // subnormals: 0 .. 2^mant - 1
  } else {
    int e = 0;
    std::frexp(a, &e);
    const int lead = e - 1;
    const double sig = a / std::ldexp(1.0, lead - f.mant);  // 2^mant .. 2^(mant+1) - 1
    pos = static_cast<double>(lead - f.emin) * std::ldexp(1.0, f.mant) + sig;
  }
  return std::signbit(v) ? -pos : pos;
}

}  // namespace cutover

#endif  // CUTOVER_COMPAT_DTYPE_H_
