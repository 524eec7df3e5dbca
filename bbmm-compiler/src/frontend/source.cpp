#include "frontend/source.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

namespace bbmm::compiler {
namespace {

struct LineToken {
  int col;  // 0-based start
  int len;
  std::string_view text;
};

// Splits one line into identifier/number runs and single punctuation characters,
// skipping blanks and comments. Good enough to align a line with its expansion.
std::vector<LineToken> split_line(std::string_view line) {
  std::vector<LineToken> out;
  size_t i = 0;
  while (i < line.size()) {
    char c = line[i];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      ++i;
    } else if (c == '/' && i + 1 < line.size() && line[i + 1] == '/') {
      break;
    } else if (c == '/' && i + 1 < line.size() && line[i + 1] == '*') {
      size_t end = line.find("*/", i + 2);
      i = end == std::string_view::npos ? line.size() : end + 2;
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.') {
      size_t j = i;
      while (j < line.size() && (std::isalnum(static_cast<unsigned char>(line[j])) ||
                                 line[j] == '_' || line[j] == '.'))
        ++j;
      out.push_back({static_cast<int>(i), static_cast<int>(j - i), line.substr(i, j - i)});
      i = j;
    } else if (c == '"' || c == '\'') {
      size_t j = i + 1;
      while (j < line.size() && line[j] != c) j += (line[j] == '\\') ? 2 : 1;
      j = std::min(j + 1, line.size());
      out.push_back({static_cast<int>(i), static_cast<int>(j - i), line.substr(i, j - i)});
      i = j;
    } else {
      out.push_back({static_cast<int>(i), 1, line.substr(i, 1)});
      ++i;
    }
  }
  return out;
}

}  // namespace

SourceManager::SourceManager(std::string pp_text, std::string main_file)
    : pp_text_(std::move(pp_text)), main_file_(std::move(main_file)) {
  pp_line_starts_.push_back(0);
  for (size_t i = 0; i < pp_text_.size(); ++i)
    if (pp_text_[i] == '\n') pp_line_starts_.push_back(i + 1);
  origins_.resize(pp_line_starts_.size());
}

void SourceManager::add_file_contents(const std::string& file, std::string contents) {
  FileData& d = files_[file];
  d.contents = std::move(contents);
  d.loaded = true;
  d.exists = true;
  d.line_starts.assign(1, 0);
  for (size_t i = 0; i < d.contents.size(); ++i)
    if (d.contents[i] == '\n') d.line_starts.push_back(i + 1);
}

SourceManager::FileData* SourceManager::file_data(const std::string& file) {
  FileData& d = files_[file];
  if (!d.loaded) {
    d.loaded = true;
    if (!file.empty() && file[0] != '<') {
      std::ifstream in(file, std::ios::binary);
      if (in) {
        std::ostringstream ss;
        ss << in.rdbuf();
        d.contents = ss.str();
        d.exists = true;
      }
    }
    d.line_starts.assign(1, 0);
    for (size_t i = 0; i < d.contents.size(); ++i)
      if (d.contents[i] == '\n') d.line_starts.push_back(i + 1);
  }
  return d.exists ? &d : nullptr;
}

const std::string* SourceManager::file_contents(const std::string& file) {
  FileData* d = file_data(file);
  return d ? &d->contents : nullptr;
}

int SourceManager::file_id(const std::string& file) {
  auto it = file_ids_.find(file);
  if (it != file_ids_.end()) return it->second;
  int id = static_cast<int>(file_names_.size());
  file_names_.push_back(file);
  file_ids_.emplace(file, id);
  return id;
}

void SourceManager::map_line(int pp_line, const std::string& file, int orig_line) {
  if (pp_line < 0 || pp_line >= static_cast<int>(origins_.size())) return;
  origins_[pp_line] = {file_id(file), orig_line};
}

int SourceManager::pp_line_of(size_t offset) const {
  auto it = std::upper_bound(pp_line_starts_.begin(), pp_line_starts_.end(), offset);
  return static_cast<int>(it - pp_line_starts_.begin()) - 1;
}

std::string_view SourceManager::pp_line_text(int pp_line) const {
  if (pp_line < 0 || pp_line >= static_cast<int>(pp_line_starts_.size())) return {};
  size_t b = pp_line_starts_[pp_line];
  size_t e = pp_line + 1 < static_cast<int>(pp_line_starts_.size())
                 ? pp_line_starts_[pp_line + 1] - 1
                 : pp_text_.size();
  return std::string_view(pp_text_).substr(b, e - b);
}

std::optional<std::string> SourceManager::original_line(const std::string& file, int line) {
  FileData* d = file_data(file);
  if (!d || line < 1 || line > static_cast<int>(d->line_starts.size())) return std::nullopt;
  size_t b = d->line_starts[line - 1];
  size_t e = d->contents.find('\n', b);
  if (e == std::string::npos) e = d->contents.size();
  std::string s = d->contents.substr(b, e - b);
  if (!s.empty() && s.back() == '\r') s.pop_back();
  return s;
}

std::optional<size_t> SourceManager::line_start_offset(const std::string& file, int line) {
  FileData* d = file_data(file);
  if (!d || line < 1 || line > static_cast<int>(d->line_starts.size())) return std::nullopt;
  return d->line_starts[line - 1];
}

int SourceManager::map_column(int pp_line, int pp_col, const std::string& orig) {
  auto it = column_maps_.find(pp_line);
  if (it == column_maps_.end()) {
    std::string_view pp = pp_line_text(pp_line);
    std::vector<int> map(pp.size() + 2, 0);
    if (pp == orig) {
      for (size_t i = 0; i < map.size(); ++i) map[i] = static_cast<int>(i);
    } else {
      std::vector<LineToken> a = split_line(pp), b = split_line(orig);
      size_t n = a.size(), m = b.size();
      std::vector<int> match(n, -1);
      if (n * m <= 250000) {
        // Longest common subsequence of token spellings.
        std::vector<std::vector<uint16_t>> L(n + 1, std::vector<uint16_t>(m + 1, 0));
        for (size_t i = n; i-- > 0;)
          for (size_t j = m; j-- > 0;)
            L[i][j] = a[i].text == b[j].text ? L[i + 1][j + 1] + 1
                                               : std::max(L[i + 1][j], L[i][j + 1]);
        size_t i = 0, j = 0;
        while (i < n && j < m) {
          if (a[i].text == b[j].text) {
            match[i++] = static_cast<int>(j++);
          } else if (L[i + 1][j] >= L[i][j + 1]) {
            ++i;
          } else {
            ++j;
          }
        }
      }
      // Column per pp token: matched -> its twin; unmatched -> the first unmatched
      // original token after the previous match (the macro name), else the previous match.
      std::vector<int> tok_col(n, 0);
      int prev_orig = -1;
      for (size_t i = 0; i < n; ++i) {
        if (match[i] >= 0) {
          tok_col[i] = b[match[i]].col;
          prev_orig = match[i];
        } else {
          int cand = prev_orig + 1;
          size_t next_match = i + 1;
          while (next_match < n && match[next_match] < 0) ++next_match;
          int limit = next_match < n ? match[next_match] : static_cast<int>(m);
          if (cand < limit && cand < static_cast<int>(m)) {
            tok_col[i] = b[cand].col;
          } else if (prev_orig >= 0) {
            tok_col[i] = b[prev_orig].col;
          } else {
            tok_col[i] = m > 0 ? b[0].col : 0;
          }
        }
      }
      size_t t = 0;
      for (size_t c = 0; c < map.size(); ++c) {
        while (t < n && static_cast<size_t>(a[t].col + a[t].len) <= c) ++t;
        if (t < n) {
          int within = c >= static_cast<size_t>(a[t].col) ? static_cast<int>(c) - a[t].col : 0;
          bool matched = match[t] >= 0;
          map[c] = tok_col[t] + (matched ? within : 0);
        } else {
          map[c] = n ? tok_col[n - 1] : static_cast<int>(c);
        }
      }
    }
    it = column_maps_.emplace(pp_line, std::move(map)).first;
  }
  const std::vector<int>& map = it->second;
  int idx = std::clamp(pp_col - 1, 0, static_cast<int>(map.size()) - 1);
  return map[idx] + 1;
}

SourceLoc SourceManager::resolve(size_t offset) {
  offset = std::min(offset, pp_text_.size());
  int pl = pp_line_of(offset);
  int pp_col = static_cast<int>(offset - pp_line_starts_[pl]) + 1;
  const LineOrigin& o = origins_[pl];
  if (o.file_id < 0) return SourceLoc{main_file_, pl + 1, pp_col};
  SourceLoc loc{file_names_[o.file_id], o.line, pp_col};
  if (auto orig = original_line(loc.file, loc.line)) loc.col = map_column(pl, pp_col, *orig);
  return loc;
}

}  // namespace bbmm::compiler
