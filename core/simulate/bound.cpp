#include "core/simulate/bound.h"

#include "core/simulate/power_model.h"

#include <algorithm>
#include <cmath>
#include <functional>

namespace powerctl::simulate {
namespace {

struct Point {
  double cores;  // new work on the node
  double watts;
};

struct Segment {
  double cores;  // length
  double slope;  // watts per core
};

// The node's true watts at each level where its curve can bend, from its base load to the
// most new work it can take (`limit` cores).
std::vector<Point> Samples(const NodeRuntime& n, double limit, bool idle_off) {
  const SimNode& node = *n.node;
  const double free = std::min(limit, std::max(0.0, node.cpu_cores - n.base_cpu_used));
  std::vector<double> levels = {0.0, free};
  const std::size_t steps = node.power_curve.empty() ? 100 : kCurvePoints - 1;
  for (std::size_t k = 1; k < steps; ++k) {
    const double cores =
        node.cpu_cores * static_cast<double>(k) / static_cast<double>(steps) - n.base_cpu_used;
    if (cores > 0 && cores < free) levels.push_back(cores);
  }
  std::sort(levels.begin(), levels.end());
  std::vector<Point> points;
  for (double x : levels) {
    const double fraction = (n.base_cpu_used + x) / node.cpu_cores;
    points.push_back({x, TrueWatts(node, fraction)});
  }
  if (idle_off) points.front().watts = 0;  // no new work: switched off
  return points;
}

// The lower convex envelope of points sorted by cores (Andrew's monotone chain, lower half),
// as segments.
std::vector<Segment> Envelope(const std::vector<Point>& points) {
  std::vector<Point> hull;
  for (const Point& p : points) {
    while (hull.size() >= 2) {
      const Point& a = hull[hull.size() - 2];
      const Point& b = hull.back();
      // Drop b when it is on or above the line from a to p.
      const double cross =
          (b.cores - a.cores) * (p.watts - a.watts) - (b.watts - a.watts) * (p.cores - a.cores);
      if (cross > 0) break;
      hull.pop_back();
    }
    hull.push_back(p);
  }
  std::vector<Segment> segments;
  for (std::size_t k = 1; k < hull.size(); ++k) {
    const double length = hull[k].cores - hull[k - 1].cores;
    if (length > 1e-12) segments.push_back({length, (hull[k].watts - hull[k - 1].watts) / length});
  }
  return segments;
}

}  // namespace

double LowerBoundWatts(const std::vector<NodeRuntime>& nodes, std::vector<double> pod_cores,
                       bool idle_off) {
  // largest[k]: the CPU of the k largest pods, what k free pod slots can take at most.
  std::sort(pod_cores.begin(), pod_cores.end(), std::greater<>());
  std::vector<double> largest(pod_cores.size() + 1, 0.0);
  for (std::size_t k = 0; k < pod_cores.size(); ++k) largest[k + 1] = largest[k] + pod_cores[k];
  const double added_cores = largest.back();
  double watts = 0;
  std::vector<Segment> segments;
  for (const NodeRuntime& n : nodes) {
    const auto slots = static_cast<std::size_t>(std::max(0, n.node->max_pods - n.pod_count));
    std::vector<Point> points = Samples(n, largest[std::min(slots, pod_cores.size())], idle_off);
    watts += points.front().watts;
    for (const Segment& s : Envelope(points)) segments.push_back(s);
  }
  std::sort(segments.begin(), segments.end(),
            [](const Segment& a, const Segment& b) { return a.slope < b.slope; });
  double left = std::max(0.0, added_cores);
  for (const Segment& s : segments) {
    if (left <= 0) break;
    const double take = std::min(left, s.cores);
    watts += take * s.slope;
    left -= take;
  }
  return watts;
}

}  // namespace powerctl::simulate
