#include "cli/simulate_progress.h"

#include "cli/progress_line.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace powerctl::cli {
namespace {

constexpr int kBarWidth = 10;

std::string Bar(double fraction) {
  const int filled =
      std::clamp(static_cast<int>(std::floor(fraction * kBarWidth + 1e-9)), 0, kBarWidth);
  return "[" + std::string(static_cast<std::size_t>(filled), '#') +
         std::string(static_cast<std::size_t>(kBarWidth - filled), '-') + "]";
}

}  // namespace

void SimulationBars::Update(const simulate::SimulationProgress& p) {
  runs_ = p.seeds * p.scorers;
  fraction_done_ = p.fraction_done;
  const std::pair<int, int> key{p.seed_index, p.scorer_index};
  if (p.scorer_done) {
    running_.erase(key);
    ++done_;
    return;
  }
  Run& run = running_[key];
  run.label = p.seeds > 1 ? fmt::format("{} s{}", p.scorer, p.seed_index + 1) : p.scorer;
  run.fraction = p.run_fraction_done;
}

std::string SimulationBars::Text(std::chrono::steady_clock::duration elapsed) const {
  std::string text = fmt::format("{}/{} runs done", done_, runs_);
  for (const auto& [key, run] : running_) {
    text += fmt::format("  {} {} {:.0f}%", run.label, Bar(run.fraction), run.fraction * 100);
  }
  if (std::string eta = EtaText(elapsed, fraction_done_); !eta.empty()) text += "  " + eta;
  return text;
}

}  // namespace powerctl::cli
