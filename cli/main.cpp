// powerctl's entry point: build the context from the process, then run the command tree.
#include "cli/main_context.h"

int main(int argc, char** argv) {
  return powerctl::cli::Main(argc, argv);
}
