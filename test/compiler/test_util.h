#pragma once
// Shared helpers of the compiler tests: input discovery and a small line diff.

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace bbmm::compiler::testing {

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The files of "dir" ending in "ext", sorted (deterministic test order).
inline std::vector<std::filesystem::path> files_in(const std::string& dir, const std::string& ext) {
  std::vector<std::filesystem::path> out;
  if (!std::filesystem::is_directory(dir)) return out;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.is_regular_file() && (ext.empty() || e.path().extension() == ext)) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

inline std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> v;
  std::istringstream ss(s);
  for (std::string l; std::getline(ss, l);) v.push_back(l);
  return v;
}

// A unified-style diff (LCS over lines) of "expected" and "actual".
inline std::string line_diff(const std::string& expected, const std::string& actual) {
  std::vector<std::string> a = split_lines(expected), b = split_lines(actual);
  size_t n = a.size(), m = b.size();
  std::vector<std::vector<int>> L(n + 1, std::vector<int>(m + 1, 0));
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;)
      L[i][j] = a[i] == b[j] ? L[i + 1][j + 1] + 1 : std::max(L[i + 1][j], L[i][j + 1]);
  std::ostringstream out;
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] == b[j]) {
      ++i;
      ++j;
    } else if (j < m && (i == n || L[i][j + 1] >= L[i + 1][j])) {
      out << "+" << b[j++] << "\n";
    } else {
      out << "-" << a[i++] << "\n";
    }
  }
  return out.str();
}

// The options of a first comment line "bbmmc-args: ..." of an input ({} without one).
inline std::vector<std::string> extra_args(const std::string& text) {
  std::vector<std::string> args;
  size_t p = text.find("bbmmc-args:");
  size_t nl = text.find('\n');
  if (p == std::string::npos || p > nl) return args;
  std::istringstream ss(text.substr(p + 11, nl - p - 11));
  for (std::string w; ss >> w;) args.push_back(w);
  return args;
}

// A gtest-safe name for a file.
inline std::string test_name(const std::filesystem::path& p) {
  std::string s = p.stem().string();
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

}  // namespace bbmm::compiler::testing
