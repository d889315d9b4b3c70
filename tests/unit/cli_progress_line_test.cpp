// The terminal progress line: redraws in place, throttled, erased at the end; the ETA text.
#include "cli/progress_line.h"

#include <gtest/gtest.h>

#include <sstream>

namespace powerctl::cli {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(ProgressLineTest, RedrawsInPlaceAtMostEveryIntervalAndErasesItself) {
  std::ostringstream terminal;
  ProgressLine::Clock::time_point now{};
  {
    ProgressLine line(terminal, milliseconds(100), [&] { return now; });
    line.Show("seed 1/3, load 10%");  // the first draw is immediate
    EXPECT_EQ(terminal.str(), "\rseed 1/3, load 10%");
    now += milliseconds(50);
    line.Show("seed 1/3, load 20%");  // too soon
    EXPECT_EQ(terminal.str(), "\rseed 1/3, load 10%");
    now += milliseconds(60);
    line.Show("seed 2/3");  // shorter: padded over the old text
    EXPECT_EQ(terminal.str(), "\rseed 1/3, load 10%\rseed 2/3" + std::string(10, ' '));
    terminal.str("");
  }
  // Going out of scope erases the text drawn last.
  EXPECT_EQ(terminal.str(), "\r" + std::string(8, ' ') + "\r");
}

TEST(ProgressLineTest, NothingDrawnNothingErased) {
  std::ostringstream terminal;
  { ProgressLine line(terminal); }
  EXPECT_EQ(terminal.str(), "");
}

TEST(ProgressLineTest, ClearThenShowDrawsAtOnce) {
  std::ostringstream terminal;
  ProgressLine::Clock::time_point now{};
  ProgressLine line(terminal, milliseconds(100), [&] { return now; });
  line.Show("a");
  line.Clear();
  terminal.str("");
  line.Show("b");
  EXPECT_EQ(terminal.str(), "\rb");
}

TEST(EtaTextTest, SaysHowLongIsLeftOnceItCanTell) {
  EXPECT_EQ(EtaText(milliseconds(500), 0.5), "");  // too early
  EXPECT_EQ(EtaText(seconds(10), 0), "");
  EXPECT_EQ(EtaText(seconds(10), 0.5), "ETA 10s");
  EXPECT_EQ(EtaText(seconds(20), 0.2), "ETA 1m20s");
  EXPECT_EQ(EtaText(seconds(3600), 0.25), "ETA 3h00m");
  EXPECT_EQ(EtaText(seconds(5), 1.0), "ETA 0s");
}

}  // namespace
}  // namespace powerctl::cli
