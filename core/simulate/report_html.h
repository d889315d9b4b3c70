#pragma once
// `simulate --report FILE.html`: one self-contained page (inline CSS and SVG, no scripts, no
// network) with the summary table, a chart of the mean true watts per node per scorer at
// the end of the run, and a chart of cluster watts as the load grows.

#include "core/simulate/simulate.h"

#include <string>

namespace powerctl::simulate {

std::string RenderHtmlReport(const SimulationResult& result);

// The chart colour of a scorer (also used by the page's legend).
std::string ScorerColour(const std::string& scorer);

}  // namespace powerctl::simulate
