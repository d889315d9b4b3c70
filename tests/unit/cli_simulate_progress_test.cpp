// simulate's progress line: a bar per run in progress, runs that ended counted.
#include "cli/simulate_progress.h"

#include <gtest/gtest.h>

namespace powerctl::cli {
namespace {

using std::chrono::seconds;

simulate::SimulationProgress Call(int seed, int scorer, const char* name, double run, bool done,
                                  int seeds = 1) {
  simulate::SimulationProgress p;
  p.seed_index = seed;
  p.seeds = seeds;
  p.scorer = name;
  p.scorer_index = scorer;
  p.scorers = 2;
  p.run_fraction_done = run;
  p.scorer_done = done;
  p.fraction_done = 0.5;
  return p;
}

TEST(SimulationBarsTest, ShowsABarForEachRunInProgressAndCountsTheEnded) {
  SimulationBars bars;
  bars.Update(Call(0, 1, "default", 0.4, false));
  bars.Update(Call(0, 0, "powerctl", 0.75, false));
  EXPECT_EQ(bars.Text(seconds(0)),
            "0/2 runs done  powerctl [#######---] 75%  default [####------] 40%");
  bars.Update(Call(0, 1, "default", 1, true));
  EXPECT_EQ(bars.Text(seconds(10)), "1/2 runs done  powerctl [#######---] 75%  ETA 10s");
}

TEST(SimulationBarsTest, NamesTheSeedWhenThereAreSeveral) {
  SimulationBars bars;
  bars.Update(Call(1, 0, "powerctl", 0.1, false, 3));
  EXPECT_EQ(bars.Text(seconds(0)), "0/6 runs done  powerctl s2 [#---------] 10%");
}

}  // namespace
}  // namespace powerctl::cli
