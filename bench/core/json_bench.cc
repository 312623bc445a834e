// JSON parsing throughput on a generated ~1 MB fingerprint-like document (an array of host
// objects with strings, numbers and nested library lists): nlohmann-json (what cutover uses),
// our ParseJson wrapper over it, and simdjson's DOM parser side by side.
#include <string>

#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>
#ifdef CUTOVER_BENCH_SIMDJSON
#include <simdjson.h>
#endif

#include "core/json.h"

namespace cutover {
namespace {

// A deterministic document of about `bytes` bytes.
std::string FingerprintLike(size_t bytes) {
  nlohmann::json hosts = nlohmann::json::array();
  std::string text;
  for (int i = 0; text.size() < bytes; ++i) {
    nlohmann::json libs = nlohmann::json::array();
    for (const char* lib :
         {"libcudart.so.12", "libcublas.so.12", "libcudnn.so.9", "libnccl.so.2"}) {
      libs.push_back({{"name", lib},
                      {"version", "12." + std::to_string(i % 7) + ".1"},
                      {"path", std::string("/usr/local/cuda/lib64/") + lib}});
    }
    hosts.push_back({{"host", "node-" + std::to_string(i)},
                     {"gpu", "NVIDIA H100 80GB HBM3"},
                     {"uuid", "GPU-" + std::to_string(1000000007ull * (i + 1))},
                     {"driver", "550.54.15"},
                     {"mem_bytes", 85899345920ull + i},
                     {"temp_c", 30.5 + (i % 40) * 0.25},
                     {"power_w", 700.0 - i % 100},
                     {"mig", i % 3 == 0},
                     {"libs", libs}});
    if (i % 64 == 63) {
      text = nlohmann::json({{"schema", "cutover.fingerprint/1"}, {"hosts", hosts}}).dump();
    }
  }
  return text;
}

const std::string& Document() {
  static const std::string doc = FingerprintLike(1 << 20);
  return doc;
}

void BM_NlohmannParse(benchmark::State& state) {
  const std::string& text = Document();
  for (auto _ : state) benchmark::DoNotOptimize(nlohmann::json::parse(text));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["doc_bytes"] = static_cast<double>(text.size());
}
BENCHMARK(BM_NlohmannParse)->Unit(benchmark::kMillisecond);

void BM_CutoverParseJson(benchmark::State& state) {
  const std::string& text = Document();
  for (auto _ : state) benchmark::DoNotOptimize(ParseJson(text, "bench"));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_CutoverParseJson)->Unit(benchmark::kMillisecond);

#ifdef CUTOVER_BENCH_SIMDJSON
void BM_SimdjsonDom(benchmark::State& state) {
  const std::string& text = Document();
  simdjson::padded_string padded(text);
  simdjson::dom::parser parser;
  for (auto _ : state) {
    simdjson::dom::element doc;
    if (parser.parse(padded).get(doc) != simdjson::SUCCESS) {
      state.SkipWithError("simdjson parse failed");
      break;
    }
    benchmark::DoNotOptimize(doc);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_SimdjsonDom)->Unit(benchmark::kMillisecond);

// simdjson's on-demand API, visiting every host's strings and numbers (what a reader would do).
void BM_SimdjsonOnDemandVisit(benchmark::State& state) {
  const std::string& text = Document();
  simdjson::padded_string padded(text);
  simdjson::ondemand::parser parser;
  for (auto _ : state) {
    simdjson::ondemand::document doc = parser.iterate(padded);
    uint64_t sum = 0;
    for (auto host : doc["hosts"].get_array()) {
      std::string_view name = host["host"].get_string();
      sum += name.size() + host["mem_bytes"].get_uint64().value();
    }
    benchmark::DoNotOptimize(sum);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}
BENCHMARK(BM_SimdjsonOnDemandVisit)->Unit(benchmark::kMillisecond);
#endif

}  // namespace
}  // namespace cutover

BENCHMARK_MAIN();
