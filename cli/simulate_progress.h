#pragma once
// What `simulate` shows on its progress line while seeds and scorers run in parallel: a short
// bar for each run in progress, how many runs have ended, and the time left.

#include "core/simulate/simulate.h"

#include <chrono>
#include <map>
#include <string>
#include <utility>

namespace powerctl::cli {

class SimulationBars {
 public:
  // Takes in one progress call (they come one at a time).
  void Update(const simulate::SimulationProgress& progress);
  // "2/8 runs done  powerctl [####------] 41%  peaks [#######---] 70%  ETA 30s" (seeds named
  // "powerctl s2" when there are several); `elapsed` since the simulation started.
  std::string Text(std::chrono::steady_clock::duration elapsed) const;

 private:
  struct Run {
    std::string label;
    double fraction = 0;
  };
  std::map<std::pair<int, int>, Run> running_;  // by (seed, scorer) index, in that order
  int done_ = 0;
  int runs_ = 0;
  double fraction_done_ = 0;
};

}  // namespace powerctl::cli
