// bbmmc: the BBMM compiler driver. See docs/bbmmc.md.
#include <iostream>
#include <string>
#include <vector>

#include "driver/driver.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return bbmm::compiler::run_bbmmc(args, std::cout, std::cerr);
}
