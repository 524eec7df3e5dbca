#pragma once
// Source text and locations: the preprocessed translation unit bbmmc parses, the original
// files it came from, and the mapping from a byte of the former to a line and column of
// the latter (through the `# <line> "file"` markers the preprocessor leaves behind).

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace bbmm::compiler {

// A position in a user's file: 1-based line and column. `file` empty means unknown.
struct SourceLoc {
  std::string file;
  int line = 0;
  int col = 0;
  bool valid() const { return line > 0; }
};

// Owns the preprocessed text and answers "where did this byte come from?".
// Not thread-safe (caches file contents and per-line column maps).
class SourceManager {
 public:
  // "pp_text" is the preprocessor output; "main_file" the name of the user's file as the
  // preprocessor spelled it in its line markers.
  SourceManager(std::string pp_text, std::string main_file);

  const std::string& text() const { return pp_text_; }
  const std::string& main_file() const { return main_file_; }

  // Registers the contents of "file" so that it is not read from disk (tests, fuzzing,
  // and the main file, which the driver has read already).
  void add_file_contents(const std::string& file, std::string contents);

  // Records that the preprocessed line starting at byte "pp_line_start" (0-based line
  // number "pp_line") is line "orig_line" of "file". Called by the lexer for every line.
  void map_line(int pp_line, const std::string& file, int orig_line);

  // The original location of byte "offset" of the preprocessed text. Columns are exact
  // where the preprocessor kept the line as written and point at the macro name inside
  // lines that it expanded.
  SourceLoc resolve(size_t offset);

  // Line "line" (1-based) of "file" without its newline, or nullopt if unknown.
  std::optional<std::string> original_line(const std::string& file, int line);

  // Byte offset in "file" of the start of line "line" (1-based), or nullopt.
  std::optional<size_t> line_start_offset(const std::string& file, int line);

  // Contents of "file" (read from disk on first use), or nullptr.
  const std::string* file_contents(const std::string& file);

  // 0-based preprocessed line containing byte "offset".
  int pp_line_of(size_t offset) const;
  std::string_view pp_line_text(int pp_line) const;

 private:
  struct LineOrigin {
    int file_id = -1;
    int line = 0;
  };
  struct FileData {
    std::string contents;
    bool loaded = false;
    bool exists = false;
    std::vector<size_t> line_starts;
  };
  FileData* file_data(const std::string& file);
  int file_id(const std::string& file);
  // Column in the original line of the token at column "pp_col" (1-based) of pp line.
  int map_column(int pp_line, int pp_col, const std::string& orig);

  std::string pp_text_;
  std::string main_file_;
  std::vector<size_t> pp_line_starts_;
  std::vector<LineOrigin> origins_;
  std::vector<std::string> file_names_;
  std::unordered_map<std::string, int> file_ids_;
  std::map<std::string, FileData> files_;
  std::unordered_map<int, std::vector<int>> column_maps_;  // pp line -> orig col per pp col
};

}  // namespace bbmm::compiler
