#pragma once
// kubectl-style tables: upper-case headers, columns padded to their widest cell and
// separated by three spaces, no borders, so `awk '{print $1}'` and eyes both work.

#include <iosfwd>
#include <string>
#include <vector>

namespace powerctl::cli {

class Table {
 public:
  explicit Table(std::vector<std::string> headers) : headers_(std::move(headers)) {}
  void AddRow(std::vector<std::string> cells);
  // Widths count UTF-8 code points, so "°C" pads like two characters.
  void Print(std::ostream& out) const;

 private:
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace powerctl::cli
