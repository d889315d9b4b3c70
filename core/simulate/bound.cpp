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

// The lower convex envelope of points sorted by cores (Andrew's monotone chain, lower half).
std::vector<Point> LowerHull(const std::vector<Point>& points) {
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
    if (!hull.empty() && p.cores - hull.back().cores <= 1e-12) continue;
    hull.push_back(p);
  }
  return hull;
}

std::vector<Segment> Segments(const std::vector<Point>& hull) {
  std::vector<Segment> segments;
  for (std::size_t k = 1; k < hull.size(); ++k) {
    const double length = hull[k].cores - hull[k - 1].cores;
    segments.push_back({length, (hull[k].watts - hull[k - 1].watts) / length});
  }
  return segments;
}

// Linear interpolation on a polyline sorted by cores, from index `at` on (moved forward).
double At(const std::vector<Point>& line, double cores, std::size_t& at) {
  while (at + 1 < line.size() && line[at + 1].cores < cores) ++at;
  if (at + 1 >= line.size()) return line.back().watts;
  const Point& a = line[at];
  const Point& b = line[at + 1];
  if (cores <= a.cores) return a.watts;
  return a.watts + (b.watts - a.watts) * (cores - a.cores) / (b.cores - a.cores);
}

// Pods grouped by their CPU: what the slot-aware bound prices.
struct PodKind {
  double cores = 0;
  double count = 0;
};

struct NodeSlots {
  std::vector<Point> hull;  // lower envelope of the node's watts over new work
  double slots = 0;         // free pod slots
};

// The Lagrangian dual of the placement's continuous relaxation with pod slots (see bound.h):
// for prices mu (one per pod kind),
//   g(mu) = sum_k mu_k n_k + sum_i min_C [ hull_i(C) - S_i * phi(C / S_i) ]
// where phi(x) is the most price a slot can hold at x cores per slot: the upper concave
// envelope of (0, 0) and each kind's (cores, mu). Every mu gives a bound (weak duality); it
// is found by supergradient ascent from the prices of water filling (mu_k = slope * cores_k,
// where g equals that bound when slots do not bind), keeping the best.
class SlotDual {
 public:
  SlotDual(std::vector<NodeSlots> nodes, std::vector<PodKind> kinds)
      : nodes_(std::move(nodes)), kinds_(std::move(kinds)) {}

  // g(mu) and its supergradient (pods of each kind left over).
  double Evaluate(const std::vector<double>& mu, std::vector<double>& gradient) const {
    double g = 0;
    for (std::size_t k = 0; k < kinds_.size(); ++k) {
      g += mu[k] * kinds_[k].count;
      gradient[k] = kinds_[k].count;
    }
    // phi's vertices as points (cores per slot, price), with the kind at each vertex.
    std::vector<std::pair<Point, std::size_t>> candidates;
    candidates.push_back({{0, 0}, kNone});
    for (std::size_t k = 0; k < kinds_.size(); ++k)
      candidates.push_back({{kinds_[k].cores, mu[k]}, k});
    std::sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) {
      return a.first.cores < b.first.cores ||
             (a.first.cores == b.first.cores && a.first.watts > b.first.watts);
    });
    std::vector<std::pair<Point, std::size_t>> phi;  // upper hull
    for (const auto& c : candidates) {
      if (!phi.empty() && c.first.cores - phi.back().first.cores <= 1e-12) continue;
      while (phi.size() >= 2) {
        const Point& a = phi[phi.size() - 2].first;
        const Point& b = phi.back().first;
        const Point& p = c.first;
        const double cross =
            (b.cores - a.cores) * (p.watts - a.watts) - (b.watts - a.watts) * (p.cores - a.cores);
        if (cross < 0) break;
        phi.pop_back();
      }
      phi.push_back(c);
    }
    std::vector<Point> phi_points;  // phi as a polyline, for At()
    for (const auto& v : phi) phi_points.push_back(v.first);
    const double widest = phi_points.back().cores;
    std::vector<double> xs;
    for (const NodeSlots& n : nodes_) {
      if (n.slots <= 0 || n.hull.size() < 2) {
        g += n.hull.front().watts;
        continue;
      }
      const double top = std::min(n.hull.back().cores, n.slots * widest);
      xs.clear();
      for (const Point& p : n.hull)
        if (p.cores < top) xs.push_back(p.cores);
      for (const Point& v : phi_points)
        if (v.cores * n.slots < top) xs.push_back(v.cores * n.slots);
      xs.push_back(top);
      std::sort(xs.begin(), xs.end());
      std::size_t at_hull = 0, at_phi = 0;
      double best = 0, best_c = 0;
      bool first = true;
      for (double c : xs) {
        const double value = At(n.hull, c, at_hull) - n.slots * At(phi_points, c / n.slots, at_phi);
        if (first || value < best) {
          best = value;
          best_c = c;
          first = false;
        }
      }
      g += best;
      // The slots' kinds at best_c: the two ends of phi's segment around it, mixed.
      const double x = best_c / n.slots;
      std::size_t j = 0;
      while (j + 1 < phi.size() && phi[j + 1].first.cores < x) ++j;
      if (j + 1 >= phi.size()) {
        Take(phi[j].second, n.slots, gradient);
      } else {
        const double span = phi[j + 1].first.cores - phi[j].first.cores;
        const double w = std::clamp((x - phi[j].first.cores) / span, 0.0, 1.0);
        Take(phi[j].second, n.slots * (1 - w), gradient);
        Take(phi[j + 1].second, n.slots * w, gradient);
      }
    }
    return g;
  }

 private:
  static constexpr std::size_t kNone = static_cast<std::size_t>(-1);

  static void Take(std::size_t kind, double slots, std::vector<double>& gradient) {
    if (kind != kNone) gradient[kind] -= slots;
  }

  std::vector<NodeSlots> nodes_;
  std::vector<PodKind> kinds_;
};

// The best g(mu) found by supergradient ascent from `start`.
double MaximiseDual(const SlotDual& dual, std::vector<double> mu, double price_scale) {
  constexpr int kIterations = 300;
  std::vector<double> gradient(mu.size());
  double best = dual.Evaluate(mu, gradient);
  for (int t = 0; t < kIterations; ++t) {
    double norm = 0;
    for (double d : gradient) norm += d * d;
    norm = std::sqrt(norm);
    if (norm < 1e-9) break;  // every pod priced into place: the relaxation's optimum
    const double step = price_scale / std::sqrt(static_cast<double>(t) + 1);
    for (std::size_t k = 0; k < mu.size(); ++k) mu[k] += step * gradient[k] / norm;
    best = std::max(best, dual.Evaluate(mu, gradient));
  }
  return best;
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
  std::vector<NodeSlots> slotted;
  double free_slots = 0;
  for (const NodeRuntime& n : nodes) {
    const auto slots = static_cast<std::size_t>(std::max(0, n.node->max_pods - n.pod_count));
    std::vector<Point> points = Samples(n, largest[std::min(slots, pod_cores.size())], idle_off);
    watts += points.front().watts;
    std::vector<Point> hull = LowerHull(points);
    for (const Segment& s : Segments(hull)) segments.push_back(s);
    slotted.push_back({std::move(hull), static_cast<double>(slots)});
    free_slots += static_cast<double>(slots);
  }
  std::sort(segments.begin(), segments.end(),
            [](const Segment& a, const Segment& b) { return a.slope < b.slope; });
  double left = std::max(0.0, added_cores);
  double price = 0;  // watts per core of the last work placed
  for (const Segment& s : segments) {
    if (left <= 0) break;
    const double take = std::min(left, s.cores);
    watts += take * s.slope;
    price = s.slope;
    left -= take;
  }
  // Water filling lets a node take the largest pods on every node at once; pricing the pods
  // by kind tightens that where pod slots bind. Only when the relaxation has room for every
  // pod (otherwise the dual has no maximum, and some pod stays unscheduled anyway).
  if (left > 1e-9 || pod_cores.empty() || free_slots < static_cast<double>(pod_cores.size()))
    return watts;
  std::vector<PodKind> kinds;
  for (double c : pod_cores) {  // sorted, so equal sizes are adjacent
    if (!kinds.empty() && std::abs(kinds.back().cores - c) < 1e-9) {
      kinds.back().count += 1;
    } else {
      kinds.push_back({c, 1});
    }
  }
  std::vector<double> mu;
  for (const PodKind& k : kinds) mu.push_back(price * k.cores);
  const double mean_cores = added_cores / static_cast<double>(pod_cores.size());
  const double scale = std::max(price, 1e-3) * mean_cores;
  return std::max(watts, MaximiseDual(SlotDual(std::move(slotted), std::move(kinds)), mu, scale));
}

}  // namespace powerctl::simulate
