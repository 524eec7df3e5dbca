#pragma once
// User-facing diagnostics: `file:line:col: error: <what>`, the source line, a caret and
// an optional hint. Errors are collected (several per run) and never thrown.

#include <ostream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "frontend/source.h"

namespace bbmm::compiler {

enum class Severity { kError, kWarning, kNote };

struct Diagnostic {
  Severity severity = Severity::kError;
  SourceLoc loc;
  std::string message;
  std::string hint;
};

// Collects diagnostics. Not thread-safe.
class Diagnostics {
 public:
  // Streams the message; the diagnostic is recorded when the builder dies.
  class Builder {
   public:
    Builder(Diagnostics* owner, Severity s, SourceLoc loc) : owner_(owner) {
      d_.severity = s;
      d_.loc = std::move(loc);
    }
    Builder(Builder&& o) noexcept : owner_(o.owner_), d_(std::move(o.d_)), ss_(std::move(o.ss_)) {
      o.owner_ = nullptr;
    }
    Builder(const Builder&) = delete;
    ~Builder() {
      if (owner_) {
        d_.message = ss_.str();
        owner_->add(std::move(d_));
      }
    }
    template <typename T>
    Builder& operator<<(const T& v) {
      ss_ << v;
      return *this;
    }
    // What the user can do about it.
    Builder& hint(std::string h) {
      d_.hint = std::move(h);
      return *this;
    }

   private:
    Diagnostics* owner_;
    Diagnostic d_;
    std::ostringstream ss_;
  };

  static constexpr int kMaxErrors = 50;

  Builder error(const SourceLoc& loc) { return Builder(this, Severity::kError, loc); }
  Builder warning(const SourceLoc& loc) { return Builder(this, Severity::kWarning, loc); }
  Builder note(const SourceLoc& loc) { return Builder(this, Severity::kNote, loc); }

  void add(Diagnostic d);
  // Attaches hint "h" to the diagnostic just reported (if it was kept, not a duplicate).
  void set_last_hint(std::string h) {
    if (last_kept_ && !list_.empty()) list_.back().hint = std::move(h);
  }
  // Records a compiler bug (an isl failure, a broken invariant) found by pass "pass":
  // reported as an error, and bbmmc exits with status 2.
  void internal_error(const std::string& pass, const std::string& what) {
    internal_ = true;
    error({}) << "internal error in pass '" << pass << "': " << what;
  }
  bool has_internal_error() const { return internal_; }
  int error_count() const { return errors_; }
  bool has_errors() const { return errors_ > 0; }
  // True once kMaxErrors errors were reported: passes stop early.
  bool too_many() const { return errors_ >= kMaxErrors; }
  const std::vector<Diagnostic>& all() const { return list_; }

  // Prints every diagnostic in the order reported, with source line and caret when
  // "sm" knows the file.
  void render(std::ostream& os, SourceManager* sm) const;

 private:
  std::vector<Diagnostic> list_;
  int errors_ = 0;
  bool internal_ = false;
  bool last_kept_ = false;
};

// The Levenshtein distance of "a" and "b": how close a misspelling is to what was meant, for
// "did you mean" hints.
size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace bbmm::compiler
