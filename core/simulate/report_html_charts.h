#pragma once
// The report's inline SVG charts (core/simulate/report_html.h). Each scales to the width of
// the page: a viewBox and no fixed size, so the CSS decides how wide it is drawn.

#include "core/simulate/report_html.h"

#include <string>
#include <vector>

namespace powerctl::simulate::report {

// Text made safe for HTML and SVG.
std::string Escape(const std::string& text);

// Cluster watts per scorer as the load grows: the mean over seeds as a line, min to max as a
// band around it, and the lower bound at each reported load.
std::string LoadChart(const SimulationResult& result);

// Each node's true watts at the end of the run, per scorer, nodes grouped by server type: the
// mean over seeds as a bar, min to max as a whisker.
std::string NodeChart(const SimulationResult& result, const std::vector<ServerType>& types);

}  // namespace powerctl::simulate::report
