#pragma once
// Evaluates the C integer expressions bbmmc emits for boxes, guards and ranges (the isl
// AST printer's subset: literals, names, unary - and !, * / %, + -, comparisons, && ||,
// ?:, and the calls min, max, floord, also with the bbmm_ prefix of the generated code)
// at concrete values of the names, with C's 64-bit semantics. The oracles use it to check
// the text that the generated programs compile, not bbmmc's isl objects.
// Throws std::runtime_error on a syntax error or an unknown name.

#include <cctype>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace bbmm::compiler::testing {

class CEval {
 public:
  CEval(const std::string& text, const std::map<std::string, int64_t>& names) : s_(text), names_(names) {}

  int64_t run() {
    int64_t v = cond();
    skip();
    if (p_ != s_.size()) fail("unexpected text");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("c_eval: " + what + " at offset " + std::to_string(p_) + " of \"" + s_ + "\"");
  }
  void skip() {
    while (p_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[p_]))) ++p_;
  }
  bool eat(const char* tok) {
    skip();
    size_t n = std::char_traits<char>::length(tok);
    if (s_.compare(p_, n, tok) != 0) return false;
    // "<" must not match "<=", "=" never appears alone, "&" only as "&&".
    if (n == 1 && (tok[0] == '<' || tok[0] == '>' || tok[0] == '!') && p_ + 1 < s_.size() && s_[p_ + 1] == '=')
      return false;
    p_ += n;
    return true;
  }
  void expect(const char* tok) {
    if (!eat(tok)) fail(std::string("expected '") + tok + "'");
  }

  int64_t cond() {
    int64_t c = lor();
    if (!eat("?")) return c;
    int64_t a = cond();
    expect(":");
    int64_t b = cond();
    return c ? a : b;
  }
  int64_t lor() {
    int64_t v = land();
    while (eat("||")) {
      int64_t r = land();
      v = (v || r) ? 1 : 0;
    }
    return v;
  }
  int64_t land() {
    int64_t v = eq();
    while (eat("&&")) {
      int64_t r = eq();
      v = (v && r) ? 1 : 0;
    }
    return v;
  }
  int64_t eq() {
    int64_t v = rel();
    for (;;) {
      if (eat("==")) v = v == rel();
      else if (eat("!=")) v = v != rel();
      else return v;
    }
  }
  int64_t rel() {
    int64_t v = add();
    for (;;) {
      if (eat("<=")) v = v <= add();
      else if (eat(">=")) v = v >= add();
      else if (eat("<")) v = v < add();
      else if (eat(">")) v = v > add();
      else return v;
    }
  }
  int64_t add() {
    int64_t v = mul();
    for (;;) {
      if (eat("+")) v += mul();
      else if (eat("-")) v -= mul();
      else return v;
    }
  }
  int64_t mul() {
    int64_t v = unary();
    for (;;) {
      if (eat("*")) {
        v *= unary();
      } else if (eat("/")) {
        int64_t d = unary();
        if (d == 0) fail("division by zero");
        v /= d;
      } else if (eat("%")) {
        int64_t d = unary();
        if (d == 0) fail("division by zero");
        v %= d;
      } else {
        return v;
      }
    }
  }
  int64_t unary() {
    if (eat("-")) return -unary();
    if (eat("!")) return !unary();
    return primary();
  }
  int64_t primary() {
    skip();
    if (eat("(")) {
      int64_t v = cond();
      expect(")");
      return v;
    }
    if (p_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[p_]))) {
      int64_t v = 0;
      while (p_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[p_]))) v = v * 10 + (s_[p_++] - '0');
      while (p_ < s_.size() && (s_[p_] == 'L' || s_[p_] == 'l' || s_[p_] == 'U' || s_[p_] == 'u')) ++p_;
      return v;
    }
    size_t b = p_;
    while (p_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[p_])) || s_[p_] == '_')) ++p_;
    if (b == p_) fail("expected an operand");
    std::string name = s_.substr(b, p_ - b);
    if (eat("(")) {
      std::vector<int64_t> args{cond()};
      while (eat(",")) args.push_back(cond());
      expect(")");
      if (name.rfind("bbmm_", 0) == 0) name = name.substr(5);
      if (args.size() == 2 && name == "min") return args[0] < args[1] ? args[0] : args[1];
      if (args.size() == 2 && name == "max") return args[0] > args[1] ? args[0] : args[1];
      if (args.size() == 2 && name == "floord") {
        if (args[1] == 0) fail("division by zero");
        int64_t q = args[0] / args[1];
        if ((args[0] % args[1] != 0) && ((args[0] < 0) != (args[1] < 0))) --q;
        return q;
      }
      fail("unknown function " + name);
    }
    auto it = names_.find(name);
    if (it == names_.end()) fail("no value for " + name);
    return it->second;
  }

  std::string s_;
  const std::map<std::string, int64_t>& names_;
  size_t p_ = 0;
};

inline int64_t c_eval(const std::string& text, const std::map<std::string, int64_t>& names) {
  return CEval(text, names).run();
}

}  // namespace bbmm::compiler::testing
