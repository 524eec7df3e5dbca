#include "frontend/lexer.h"

#include <cctype>
#include <string>

namespace bbmm::compiler {
namespace {

bool is_ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_' || c == '$';
}
bool is_ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$';
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

constexpr std::string_view kPuncts[] = {
    ">>=", "<<=", "...", "->", "++", "--", "<<", ">>", "<=", ">=", "==", "!=", "&&",
    "||",  "*=",  "/=",  "%=", "+=", "-=", "&=", "^=", "|=", "##"};

// Parses the integer literal "s" (decimal, octal, hex, with u/l suffixes).
void parse_int(std::string_view s, Token& t) {
  uint64_t v = 0;
  size_t i = 0;
  int base = 10;
  if (s.size() > 1 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
    base = 16;
    i = 2;
  } else if (s.size() > 1 && s[0] == '0') {
    base = 8;
    i = 1;
  }
  for (; i < s.size(); ++i) {
    char c = s[i];
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else break;  // suffix
    if (d >= base) break;
    if (v > (uint64_t{1} << 62) / base) t.overflow = true;
    v = v * base + d;
  }
  if (v >= (uint64_t{1} << 62)) t.overflow = true;
  t.int_value = t.overflow ? 0 : v;
}

}  // namespace

std::vector<Token> lex(SourceManager& sm) {
  const std::string& src = sm.text();
  std::vector<Token> out;
  size_t i = 0, n = src.size();
  int pp_line = 0;
  std::string cur_file = sm.main_file();
  int cur_line = 1;
  bool at_line_start = true;

  auto newline = [&]() {
    ++pp_line;
    ++cur_line;
    sm.map_line(pp_line, cur_file, cur_line);
    at_line_start = true;
  };
  sm.map_line(0, cur_file, 1);

  while (i < n) {
    char c = src[i];
    if (c == '\n') {
      ++i;
      newline();
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      ++i;
      continue;
    }
    if (c == '\\' && i + 1 < n && src[i + 1] == '\n') {
      i += 2;
      newline();
      continue;
    }
    if (c == '/' && i + 1 < n && src[i + 1] == '/') {
      while (i < n && src[i] != '\n') ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && src[i + 1] == '*') {
      i += 2;
      while (i < n && !(src[i] == '*' && i + 1 < n && src[i + 1] == '/')) {
        if (src[i] == '\n') {
          ++i;
          newline();
          at_line_start = false;
        } else {
          ++i;
        }
      }
      i = i < n ? i + 2 : n;
      continue;
    }
    if (c == '#' && at_line_start) {
      size_t start = i;
      size_t e = i;
      while (e < n && src[e] != '\n') ++e;
      std::string_view line(src.data() + i + 1, e - i - 1);
      line = trim(line);
      i = e;
      if (line.substr(0, 6) == "pragma" && (line.size() == 6 || std::isspace(static_cast<unsigned char>(line[6])))) {
        Token t;
        t.kind = Tok::kPragma;
        t.text = trim(line.substr(6));
        t.offset = start;
        out.push_back(t);
        continue;
      }
      // `# 12 "file" flags` or `#line 12 "file"`.
      if (line.substr(0, 4) == "line") line = trim(line.substr(4));
      if (!line.empty() && std::isdigit(static_cast<unsigned char>(line[0]))) {
        long num = 0;
        size_t k = 0;
        while (k < line.size() && std::isdigit(static_cast<unsigned char>(line[k])) && num < 100000000) {
          num = num * 10 + (line[k] - '0');
          ++k;
        }
        std::string_view rest = trim(line.substr(k));
        if (!rest.empty() && rest[0] == '"') {
          size_t q = rest.find('"', 1);
          if (q != std::string_view::npos) cur_file = std::string(rest.substr(1, q - 1));
        }
        // The next line is line `num`.
        if (i < n) {
          ++i;
          ++pp_line;
          cur_line = static_cast<int>(num);
          sm.map_line(pp_line, cur_file, cur_line);
          at_line_start = true;
        }
      }
      continue;
    }
    at_line_start = false;
    Token t;
    t.offset = i;
    if (is_ident_start(c)) {
      size_t j = i;
      while (j < n && is_ident_char(src[j])) ++j;
      t.kind = Tok::kIdent;
      t.text = std::string_view(src.data() + i, j - i);
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '.' && i + 1 < n && std::isdigit(static_cast<unsigned char>(src[i + 1])))) {
      size_t j = i;
      bool is_float = false;
      bool hex = c == '0' && i + 1 < n && (src[i + 1] == 'x' || src[i + 1] == 'X');
      while (j < n) {
        char d = src[j];
        if ((d == 'e' || d == 'E' || d == 'p' || d == 'P') && j + 1 < n &&
            (src[j + 1] == '+' || src[j + 1] == '-') && (!hex || d == 'p' || d == 'P')) {
          is_float = true;
          j += 2;
        } else if (std::isalnum(static_cast<unsigned char>(d)) || d == '_' || d == '.') {
          if (d == '.') is_float = true;
          if (!hex && (d == 'e' || d == 'E')) is_float = true;
          if (hex && (d == 'p' || d == 'P')) is_float = true;
          ++j;
        } else {
          break;
        }
      }
      t.text = std::string_view(src.data() + i, j - i);
      t.kind = is_float ? Tok::kFloat : Tok::kInt;
      if (!is_float) parse_int(t.text, t);
      i = j;
    } else if (c == '"' || c == '\'') {
      size_t j = i + 1;
      while (j < n && src[j] != c && src[j] != '\n') j += (src[j] == '\\' && j + 1 < n) ? 2 : 1;
      if (j < n && src[j] == c) ++j;
      j = std::min(j, n);
      t.kind = c == '"' ? Tok::kString : Tok::kChar;
      t.text = std::string_view(src.data() + i, j - i);
      i = j;
    } else {
      t.kind = Tok::kPunct;
      size_t len = 1;
      for (std::string_view p : kPuncts)
        if (src.compare(i, p.size(), p) == 0) {
          len = p.size();
          break;
        }
      t.text = std::string_view(src.data() + i, len);
      i += len;
    }
    out.push_back(t);
  }
  Token eof;
  eof.kind = Tok::kEof;
  eof.offset = n;
  out.push_back(eof);
  return out;
}

}  // namespace bbmm::compiler
