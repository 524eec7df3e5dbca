#include "frontend/diagnostics.h"

#include <algorithm>

namespace bbmm::compiler {

void Diagnostics::add(Diagnostic d) {
  last_kept_ = false;
  if (d.severity == Severity::kError) {
    if (errors_ >= kMaxErrors) return;
    ++errors_;
  }
  // The same error at the same place once is enough (shared loop bounds are converted
  // for several statements).
  for (const Diagnostic& o : list_)
    if (o.severity == d.severity && o.loc.file == d.loc.file && o.loc.line == d.loc.line &&
        o.loc.col == d.loc.col && o.message == d.message) {
      if (d.severity == Severity::kError) --errors_;
      return;
    }
  list_.push_back(std::move(d));
  last_kept_ = true;
  if (errors_ == kMaxErrors && list_.back().severity == Severity::kError) {
    Diagnostic note;  // (built field by field: GCC 12 at -O3 misreads the braced form)
    note.severity = Severity::kNote;
    note.message = "too many errors; stopping";
    list_.push_back(std::move(note));
  }
}

void Diagnostics::render(std::ostream& os, SourceManager* sm) const {
  for (const Diagnostic& d : list_) {
    const char* kind = d.severity == Severity::kError     ? "error"
                       : d.severity == Severity::kWarning ? "warning"
                                                          : "note";
    if (d.loc.valid()) {
      os << d.loc.file << ":" << d.loc.line << ":" << d.loc.col << ": ";
    } else if (!d.loc.file.empty()) {
      os << d.loc.file << ": ";
    } else {
      os << "bbmmc: ";
    }
    os << kind << ": " << d.message << "\n";
    if (d.loc.valid() && sm) {
      if (auto line = sm->original_line(d.loc.file, d.loc.line)) {
        os << *line << "\n";
        std::string caret;
        for (int i = 0; i + 1 < d.loc.col && i < static_cast<int>(line->size()); ++i)
          caret += (*line)[i] == '\t' ? '\t' : ' ';
        os << caret << "^\n";
      }
    }
    if (!d.hint.empty()) os << "hint: " << d.hint << "\n";
  }
}

size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace bbmm::compiler
