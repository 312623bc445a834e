// A case written out so that it can be replayed where the user's framework runs
// (`compat run --dump DIR`, `compat dump CASE_ID... --dir DIR`, docs/compat.md "Reproduce a
// case in PyTorch"). Per case, a directory DIR/<case ID with '/' as '+'> holding:
//   in0.npy, in1.npy, ...  the op's inputs, float32, flat (case.json gives the logical shapes)
//   out.npy                the backend's output, float32, flat (run --dump only)
//   truth_index.npy        the sampled flat output positions, int64
//   truth.npy              the float64 truth at those positions
//   case.json              the case, its tolerance, output shape and the implementation
// and DIR/replay.py, which runs every case directory under DIR (or those named) in PyTorch.
// The .npy files are NumPy's format version 1.0 (a magic string, a header dict padded to 64
// bytes, raw little-endian data), written here.
//
// Thread-safety: functions are independent; two calls must not write the same directory.
#ifndef CUTOVER_COMPAT_CASE_DUMP_H_
#define CUTOVER_COMPAT_CASE_DUMP_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "compat/op.h"
#include "core/status.h"

namespace cutover {

// A canonical case ID ("gemm/fp16/256x256x256/row-major/dist=stress/seed=1", as CaseSpec::Id and
// `compat list --json` give it) back into its spec. InvalidArgument "compat: bad case ID 'X':
// <what>" for a malformed ID, an unknown op, a dtype or layout the op lacks, or a shape of the
// wrong rank.
Result<CaseSpec> ParseCaseId(std::string_view id);

// The bytes of a .npy file (format 1.0) of a 1-D array: descr "<f4", "<f8" or "<i8".
// REQUIRES: data holds count elements of that type.
std::string NpyBytes(std::string_view descr, const void* data, uint64_t count);

// The directory name of a case inside a dump directory: its ID with '/' replaced by '+'.
std::string CaseDumpName(const CaseSpec& spec);

struct CaseDump {
  const Tensors* inputs = nullptr;       // required
  const float* output = nullptr;         // the backend's output; null: inputs and truth only
  uint64_t output_count = 0;
  std::vector<uint64_t> sample_index;    // required, with sample_truth beside it
  std::vector<double> sample_truth;
  std::string implementation;            // "" when no backend ran
};

// Writes the case's directory under `dir` (created as needed) and DIR/replay.py.
Status WriteCaseDump(const std::string& dir, const OpDescriptor& op, const CaseSpec& spec,
                     const CaseDump& dump);

// Inputs and truth alone of each case (no backend run): `compat dump`.
// REQUIRES: every spec names a registered op that runs on the cpu.
Status DumpCases(const std::string& dir, const std::vector<CaseSpec>& specs, size_t samples);

// The text of replay.py (compat/replay_py.cc).
std::string_view ReplayScript();

}  // namespace cutover

#endif  // CUTOVER_COMPAT_CASE_DUMP_H_
