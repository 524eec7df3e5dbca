#include "codegen/c_printer.h"

#include <algorithm>
#include <vector>

namespace bbmm::compiler {

void access_subscripts(const Expr& e, std::string& base, std::vector<const Expr*>& subscripts) {
  const Expr* cur = &e;
  subscripts.clear();
  while (cur->kind == Expr::Kind::kIndex && cur->kids.size() == 2) {
    subscripts.push_back(cur->kids[1].get());
    cur = cur->kids[0].get();
    if (cur->parenthesized) break;
  }
  std::reverse(subscripts.begin(), subscripts.end());
  base = cur->kind == Expr::Kind::kIdent ? cur->text : "";
}

std::string print_c_expr(const Expr& e, const AccessRewriter& rewrite) {
  std::string r = rewrite ? rewrite(e) : std::string();
  if (r.empty()) {
    auto kid = [&](size_t k) { return print_c_expr(*e.kids[k], rewrite); };
    switch (e.kind) {
      case Expr::Kind::kInt:
      case Expr::Kind::kFloat:
      case Expr::Kind::kChar:
      case Expr::Kind::kString:
      case Expr::Kind::kIdent:
        r = e.text;
        break;
      case Expr::Kind::kSizeof:
        r = "sizeof(" + e.text + ")";
        break;
      case Expr::Kind::kIndex:
        r = kid(0) + "[" + kid(1) + "]";
        break;
      case Expr::Kind::kCall: {
        r = kid(0) + "(";
        for (size_t k = 1; k < e.kids.size(); ++k) r += (k > 1 ? ", " : "") + kid(k);
        r += ")";
        break;
      }
      case Expr::Kind::kUnary:
        r = e.text + kid(0);
        // "- -x" must not become "--x".
        if ((e.text == "-" || e.text == "+") && r.size() > 1 && r[1] == e.text[0]) {
          r = e.text + " " + kid(0);
        }
        break;
      case Expr::Kind::kPostfix:
        r = kid(0) + e.text;
        break;
      case Expr::Kind::kBinary:
      case Expr::Kind::kAssign:
        r = kid(0) + " " + e.text + " " + kid(1);
        break;
      case Expr::Kind::kTernary:
        r = kid(0) + " ? " + kid(1) + " : " + kid(2);
        break;
      case Expr::Kind::kCast:
        r = "(" + e.text + ")" + kid(0);
        break;
      case Expr::Kind::kMember:
        r = kid(0) + e.text;
        break;
      case Expr::Kind::kComma:
        r = kid(0) + ", " + kid(1);
        break;
    }
  }
  return e.parenthesized ? "(" + r + ")" : r;
}

std::string comment_safe(const std::string& text) {
  std::string r;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    if (c == '*' && i + 1 < text.size() && text[i + 1] == '/') {
      r += "* /";
      ++i;
      continue;
    }
    r += c;
  }
  // Collapse runs of blanks left by line breaks.
  std::string out;
  for (char c : r) {
    if (c == ' ' && !out.empty() && out.back() == ' ') continue;
    out += c;
  }
  return out;
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string r;
  for (size_t i = 0; i < v.size(); ++i) r += (i ? sep : "") + v[i];
  return r;
}

}  // namespace bbmm::compiler
