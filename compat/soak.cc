#include "compat/soak.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <thread>
#include <vector>

#include "compat/runner.h"
#include "compat/stability.h"

namespace cutover {
namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// One case held for repeated timing.
class SoakCase {
 public:
  virtual ~SoakCase() = default;
  // `reps` more timed repetitions, in seconds.
  virtual std::vector<double> Time(int reps) = 0;
};

// The cpu backend: inputs made once, each repetition only the op.
class CpuSoakCase : public SoakCase {
 public:
  CpuSoakCase(const OpDescriptor& op, const CaseSpec& spec, const cpu::CpuConfig& cfg)
      : op_(op), spec_(spec), cfg_(cfg), in_(op.make_inputs(spec)), out_(op.output_size(spec)) {}
  std::vector<double> Time(int reps) override {
    std::vector<double> t;
    for (int i = 0; i < reps; ++i) {
      const auto t0 = Clock::now();
      op_.run_cpu(spec_, cfg_, in_, out_.data());
      t.push_back(Since(t0));
    }
    return t;
  }

 private:
  const OpDescriptor& op_;
  CaseSpec spec_;
  cpu::CpuConfig cfg_;
  Tensors in_;
  std::vector<float> out_;
};

// Another backend: each round is one run_case call (its own warm-up and inputs).
class RunCaseSoakCase : public SoakCase {
 public:
  RunCaseSoakCase(const OpDescriptor& op, const CaseSpec& spec,
                  std::function<CaseResult(const OpDescriptor&, const CaseSpec&)> run)
      : op_(op), spec_(spec), run_(std::move(run)) {}
  std::vector<double> Time(int /*reps: fixed by run_case*/) override {
    CaseResult r = run_(op_, spec_);
    return r.status == "ok" ? r.timing.reps_s : std::vector<double>{};
  }

 private:
  const OpDescriptor& op_;
  CaseSpec spec_;
  std::function<CaseResult(const OpDescriptor&, const CaseSpec&)> run_;
};

// Round 0: every case as a normal run records it, and a SoakCase for the later rounds.
void FirstRound(const SoakOptions& o, SoakResult& out,
                std::vector<std::unique_ptr<SoakCase>>& held) {
  RunConfig cfg = o.run.config;
  cfg.reps = o.reps_per_round;
  for (const CaseSpec& c : o.run.cases) {
    const OpDescriptor& op = *FindOp(c.op);
    CaseResult r = o.run.run_case ? o.run.run_case(op, c) : RunCpuCase(op, c, cfg);
    if (r.status != "ok") {
      held.push_back(nullptr);
    } else if (o.run.run_case) {
      held.push_back(std::make_unique<RunCaseSoakCase>(op, c, o.run.run_case));
    } else {
      held.push_back(std::make_unique<CpuSoakCase>(op, c, cfg.cpu));
    }
    out.record.cases.push_back(std::move(r));
  }
}

void Summarize(SoakResult& out) {
  for (CaseResult& r : out.record.cases) {
    if (r.status != "ok") continue;
    SummarizeTiming(*FindOp(r.spec.op), &r);
    r.timing.fraction_of_ceiling =
        FractionOfCeiling(out.record.calibration, r.timing, r.spec.dtype);
  }
}

SoakRound RoundReport(const SoakResult& out, int round, int planned, double elapsed) {
  SoakRound p{.round = round, .planned = planned, .elapsed_s = elapsed};
  std::vector<double> cvs;
  for (const CaseResult& r : out.record.cases) {
    if (r.status != "ok") continue;
    const double cv = ComputeSpread(r.timing.reps_s).cv;
    cvs.push_back(cv);
    if (cv >= p.worst_cv) {
      p.worst_cv = cv;
      p.worst_case = r.id;
    }
  }
  p.median_cv = cvs.empty() ? 0 : Quantile(cvs, 0.5);
  return p;
}

}  // namespace

Result<SoakResult> RunSoak(const SoakOptions& o,
                           const std::function<void(const SoakRound&)>& on_round) {
  if (o.run.resume) return Status::InvalidArgument("compat run: --soak cannot --resume");
  if (o.duration < std::chrono::seconds(1)) {
    return Status::InvalidArgument("compat run: --soak needs a duration of at least 1s");
  }
  const auto start = Clock::now();
  const double duration = std::chrono::duration<double>(o.duration).count();
  SoakResult out;
  out.record = o.run.header;
  out.record.cases.clear();
  std::vector<std::unique_ptr<SoakCase>> held;
  FirstRound(o, out, held);
  Summarize(out);
  CUTOVER_RETURN_IF_ERROR(SaveRecord(o.run.record_path, out.record));
  out.prepare_s = Since(start);
  if (on_round) on_round(RoundReport(out, 0, 0, Since(start)));

  std::unique_ptr<InterferenceSampler> sampler;
  if (o.fs != nullptr) sampler = std::make_unique<InterferenceSampler>(*o.fs);
  std::vector<uint64_t> steal(held.size(), 0), total(held.size(), 0);
  double last_save = Since(start);
  int planned = 0;
  for (int round = 1;; ++round) {
    const double round_start = Since(start);
    const HostSample freq = sampler ? sampler->Sample(true) : HostSample{};
    for (size_t i = 0; i < held.size(); ++i) {
      if (!held[i]) continue;
      CaseResult& r = out.record.cases[i];
      const HostSample a = sampler ? sampler->Sample(false) : HostSample{};
      std::vector<double> reps;
      {
        const GpuSampling gpu(o.gpu, &r.timing.interference);
        reps = held[i]->Time(o.reps_per_round);
      }
      if (sampler) {
        HostSample b = sampler->Sample(false);
        b.mhz_min = freq.mhz_min;
        b.mhz_max = freq.mhz_max;
        InterferenceSampler::Accumulate(a, b, &r.timing.interference, &steal[i], &total[i]);
      }
      for (double t : reps) {
        r.timing.reps_s.push_back(t);
        out.timed_s += t;
      }
    }
    const double round_s = Since(start) - round_start;
    if (round == 1) {
      out.interval_s = std::max(round_s, duration / kSoakTargetRounds);
      planned = 1 + static_cast<int>(std::floor((duration - round_start) / out.interval_s));
    }
    out.rounds = round + 1;
    const double next = round_start + out.interval_s;
    if (next + round_s > duration) break;  // the next round would end past the duration
    if (Since(start) - last_save >= kSoakSaveSeconds) {
      Summarize(out);
      CUTOVER_RETURN_IF_ERROR(SaveRecord(o.run.record_path, out.record));
      last_save = Since(start);
    }
    if (on_round) on_round(RoundReport(out, round, planned, Since(start)));
    const double idle = next - Since(start);
    if (idle > 0) {
      out.idle_s += idle;
      std::this_thread::sleep_for(std::chrono::duration<double>(idle));
    }
  }
  Summarize(out);
  CUTOVER_RETURN_IF_ERROR(SaveRecord(o.run.record_path, out.record));
  out.wall_s = Since(start);
  if (on_round) on_round(RoundReport(out, out.rounds - 1, planned, out.wall_s));
  return out;
}

}  // namespace cutover
