#include "compat/case_dump.h"

#include <algorithm>
#include <charconv>
#include <cstring>

#include <nlohmann/json.hpp>

#include "compat/runner.h"
#include "core/file_util.h"

namespace cutover {
namespace {

std::vector<std::string_view> SplitOn(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    size_t at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string_view::npos ? s.npos : at - start));
    if (at == std::string_view::npos) return out;
    start = at + 1;
  }
}

bool ParseNumber(std::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool Has(const std::vector<std::string>& v, std::string_view x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

}  // namespace

Result<CaseSpec> ParseCaseId(std::string_view id) {
  auto bad = [&](const std::string& what) {
    return Status::InvalidArgument("compat: bad case ID '" + std::string(id) + "': " + what);
  };
  const std::vector<std::string_view> parts = SplitOn(id, '/');
  if (parts.size() != 5 && parts.size() != 6) {
    return bad("expected op/dtype/AxBxC/layout[/dist=D]/seed=N (cutover compat list --json)");
  }
  CaseSpec spec;
  spec.op = std::string(parts[0]);
  const OpDescriptor* op = FindOp(spec.op);
  if (op == nullptr) return bad("unknown op '" + spec.op + "' (see cutover compat list)");
  spec.dtype = std::string(parts[1]);
  if (!Has(op->dtypes, spec.dtype)) return bad(spec.op + " has no dtype '" + spec.dtype + "'");
  for (std::string_view d : SplitOn(parts[2], 'x')) {
    uint64_t v = 0;
    if (!ParseNumber(d, &v) || v == 0 || v > (uint64_t{1} << 40)) {
      return bad("shape '" + std::string(parts[2]) + "' is not positive integers joined by 'x'");
    }
    spec.shape.push_back(static_cast<int64_t>(v));
  }
  if (spec.shape.size() != op->quick.front().size()) {
    return bad(spec.op + " takes " + std::to_string(op->quick.front().size()) + " dimensions (" +
               op->shape_meaning + ")");
  }
  spec.layout = std::string(parts[3]);
  if (!Has(op->layouts, spec.layout)) return bad(spec.op + " has no layout '" + spec.layout + "'");
  if (parts.size() == 6) {
    if (parts[4].substr(0, 5) != "dist=") return bad("expected dist=D before the seed");
    spec.dist = std::string(parts[4].substr(5));
    if (Status s = ParseDist(spec.dist); !s.ok()) return bad(s.message());
  }
  std::string_view seed = parts.back();
  if (seed.substr(0, 5) != "seed=" || !ParseNumber(seed.substr(5), &spec.seed)) {
    return bad("expected seed=N at the end");
  }
  if (spec.Id() != id) return bad("not canonical (the ID reads back as " + spec.Id() + ")");
  return spec;
}

std::string NpyBytes(std::string_view descr, const void* data, uint64_t count) {
  std::string header = "{'descr': '" + std::string(descr) +
                       "', 'fortran_order': False, 'shape': (" + std::to_string(count) + ",), }";
  // magic (6) + version (2) + header length (2) + header, padded with spaces to a multiple of
  // 64 and ended by a newline.
  const size_t total = (10 + header.size() + 1 + 63) / 64 * 64;
  header.append(total - 10 - header.size() - 1, ' ');
  header.push_back('\n');
  std::string out("\x93NUMPY\x01\x00", 8);
  out.push_back(static_cast<char>(header.size() & 0xff));
  out.push_back(static_cast<char>(header.size() >> 8));
  out += header;
  const size_t elem = descr == "<f4" ? 4 : 8;
  out.append(static_cast<const char*>(data), static_cast<size_t>(count) * elem);
  return out;
}

std::string CaseDumpName(const CaseSpec& spec) {
  std::string name = spec.Id();
  std::replace(name.begin(), name.end(), '/', '+');
  return name;
}

Status WriteCaseDump(const std::string& dir, const OpDescriptor& op, const CaseSpec& spec,
                     const CaseDump& dump) {
  const std::string cdir = dir + "/" + CaseDumpName(spec);
  CUTOVER_RETURN_IF_ERROR(MakeDirs(cdir));
  auto write = [&](const std::string& name, const std::string& bytes) {
    return WriteFileAtomic(cdir + "/" + name, bytes).WithContext("compat dump");
  };
  const Tensors& in = *dump.inputs;
  for (size_t i = 0; i < in.size(); ++i) {
    CUTOVER_RETURN_IF_ERROR(
        write("in" + std::to_string(i) + ".npy", NpyBytes("<f4", in[i].data(), in[i].size())));
  }
  if (dump.output != nullptr) {
    CUTOVER_RETURN_IF_ERROR(write("out.npy", NpyBytes("<f4", dump.output, dump.output_count)));
  }
  std::vector<int64_t> index(dump.sample_index.begin(), dump.sample_index.end());
  CUTOVER_RETURN_IF_ERROR(write("truth_index.npy", NpyBytes("<i8", index.data(), index.size())));
  CUTOVER_RETURN_IF_ERROR(write(
      "truth.npy", NpyBytes("<f8", dump.sample_truth.data(), dump.sample_truth.size())));
  const int64_t red = op.reduction_length(spec);
  const Tolerance tol = ToleranceFor(spec.dtype, red);
  nlohmann::json doc = {{"schema", "cutover.compat-case/1"},
                        {"id", spec.Id()},
                        {"op", spec.op},
                        {"dtype", spec.dtype},
                        {"shape", spec.shape},
                        {"shape_meaning", op.shape_meaning},
                        {"layout", spec.layout},
                        {"dist", spec.dist},
                        {"seed", spec.seed},
                        {"inputs", in.size()},
                        {"output_count", op.output_size(spec)},
                        {"has_output", dump.output != nullptr},
                        {"implementation", dump.implementation},
                        {"reduction_length", red},
                        {"rtol", tol.rtol},
                        {"atol", tol.atol}};
  CUTOVER_RETURN_IF_ERROR(write("case.json", doc.dump(2) + "\n"));
  return WriteFileAtomic(dir + "/replay.py", ReplayScript(), 0755).WithContext("compat dump");
}

Status DumpCases(const std::string& dir, const std::vector<CaseSpec>& specs, size_t samples) {
  for (const CaseSpec& spec : specs) {
    const OpDescriptor& op = *FindOp(spec.op);
    const Tensors in = op.make_inputs(spec);
    CaseDump dump;
    dump.inputs = &in;
    dump.sample_index = SamplePositions(spec, op.output_size(spec), samples);
    for (uint64_t i : dump.sample_index) dump.sample_truth.push_back(op.truth(spec, in, i));
    CUTOVER_RETURN_IF_ERROR(WriteCaseDump(dir, op, spec, dump));
  }
  return Status::Ok();
}

}  // namespace cutover
