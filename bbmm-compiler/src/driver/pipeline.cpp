#include "driver/pipeline.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "frontend/lexer.h"
#include "frontend/parser.h"
#include "poly/budget.h"
#include "poly/deps.h"
#include "poly/block_wavefronts.h"
#include "poly/reductions.h"
#include "poly/reschedule.h"
#include "poly/serial_regions.h"

extern char** environ;

namespace bbmm::compiler {

bool run_preprocessor(const std::string& cpp, const std::vector<std::string>& args,
                      const std::string& path, std::string& output, std::string& errors) {
  std::vector<std::string> argv_s;
  std::istringstream ss(cpp);
  for (std::string w; ss >> w;) argv_s.push_back(w);
  if (argv_s.empty()) {
    errors = "empty preprocessor command";
    return false;
  }
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  argv_s.push_back(path);
  std::vector<char*> argv;
  for (std::string& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);

  int out_pipe[2], err_pipe[2];
  if (pipe(out_pipe) != 0) {
    errors = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  if (pipe(err_pipe) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    errors = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
  posix_spawn_file_actions_addclose(&fa, out_pipe[0]);
  posix_spawn_file_actions_addclose(&fa, err_pipe[0]);
  pid_t pid;
  int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(out_pipe[1]);
  close(err_pipe[1]);
  if (rc != 0) {
    close(out_pipe[0]);
    close(err_pipe[0]);
    errors = "cannot run the preprocessor '" + argv_s[0] + "': " + std::strerror(rc);
    return false;
  }
  pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}};
  int open_fds = 2;
  char buf[65536];
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        (i == 0 ? output : errors).append(buf, n);
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

namespace {

std::unique_ptr<Program> analyze(std::unique_ptr<Program> prog, const PipelineOptions& opts,
                                 Diagnostics& diag) {
  try {
    std::vector<Token> toks = lex(*prog->sm);
    prog->tu = std::make_unique<TranslationUnit>(parse_translation_unit(toks, *prog->sm, diag));
    if (prog->tu->scops.empty() && !diag.has_errors()) {
      diag.error({prog->sm->main_file(), 0, 0}) << "no '#pragma scop' region in the file";
      diag.set_last_hint("mark the loop nest to compile with '#pragma scop' and '#pragma endscop'");
      return prog;
    }
    prog->isl->set_budget(opts.max_isl_operations);
    prog->scops = build_models(*prog->tu, *prog->sm, diag, *prog->isl);
    if (diag.has_errors()) {
      prog->scops.clear();
      return prog;
    }
    if (opts.reduction_block > 0) {
      // Reductions summed in blocks: the trees rewritten, the models built again.
      std::vector<Reduction> found;
      for (Scop& s : prog->scops)
        if (run_within_isl_budget(*prog->isl, [&] { compute_dependences(s); })) {
          std::vector<Reduction> r = find_reductions(s);
          found.insert(found.end(), r.begin(), r.end());
        }
      if (!found.empty() && block_reductions(*prog->tu, found, opts.reduction_block) > 0) {
        prog->scops.clear();
        prog->scops = build_models(*prog->tu, *prog->sm, diag, *prog->isl);
        if (diag.has_errors()) {
          prog->scops.clear();
          return prog;
        }
      }
    }
    for (Scop& s : prog->scops)
      if (!run_within_isl_budget(*prog->isl, [&] { compute_dependences(s); }))
        report_scop_too_complex(diag, s.begin_loc, s.end_loc, s.function,
                                "computing its dependences", prog->isl->budget());
      else {
        if (opts.reschedule) {
          reschedule(s, *prog->isl, diag, opts.wavefront, opts.wavefront_tiles);
          block_wavefronts(s, opts.wavefront_steps);
        }
        note_serial_regions(s, diag);
      }
    if (diag.has_errors()) prog->scops.clear();
  } catch (const isl::exception& e) {
    prog->scops.clear();
    diag.internal_error("poly", std::string("isl: ") + e.what());
  } catch (const std::exception& e) {
    prog->scops.clear();
    diag.internal_error("frontend", e.what());
  }
  return prog;
}

}  // namespace

std::unique_ptr<Program> analyze_text(std::string text, const std::string& file,
                                      const PipelineOptions& opts, Diagnostics& diag) {
  auto prog = std::make_unique<Program>();
  prog->isl = std::make_unique<IslContext>();
  prog->sm = std::make_unique<SourceManager>(text, file);
  prog->sm->add_file_contents(file, std::move(text));
  return analyze(std::move(prog), opts, diag);
}

std::unique_ptr<Program> analyze_file(const std::string& path, const PipelineOptions& opts,
                                      Diagnostics& diag) {
  auto prog = std::make_unique<Program>();
  prog->isl = std::make_unique<IslContext>();
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    prog->sm = std::make_unique<SourceManager>("", path);
    diag.error({path, 0, 0}) << "cannot open '" << path << "': " << std::strerror(errno);
    return prog;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string original = ss.str();
  std::string out, errors;
  if (!run_preprocessor(opts.cpp, opts.cpp_args, path, out, errors)) {
    prog->sm = std::make_unique<SourceManager>("", path);
    auto b = diag.error({path, 0, 0});
    b << "the preprocessor '" << opts.cpp << "' failed";
    if (!errors.empty()) b << ":\n" << errors;
    b.hint("check the -D/-I options, or choose another preprocessor with --cpp or BBMM_CPP");
    return prog;
  }
  auto blank = [](const std::string& t) {
    return t.find_first_not_of(" \t\r\n") == std::string::npos;
  };
  if (blank(out) && !blank(original)) {
    // cc -E copies nothing from a file without a C suffix ('kernel', 'kernel.txt'): it takes
    // it for a linker input. Without this check it read as 'no #pragma scop region'.
    prog->sm = std::make_unique<SourceManager>("", path);
    auto b = diag.error({path, 0, 0});
    b << "the preprocessor '" << opts.cpp << "' produced no output for '" << path << "'";
    if (!errors.empty()) b << ":\n" << errors;
    b.hint("bbmmc reads C: name the file with a '.c' suffix, or have the preprocessor read it "
           "as C (--cpp='cc -E -x c')");
    return prog;
  }
  prog->sm = std::make_unique<SourceManager>(std::move(out), path);
  prog->sm->add_file_contents(path, std::move(original));
  return analyze(std::move(prog), opts, diag);
}

}  // namespace bbmm::compiler
