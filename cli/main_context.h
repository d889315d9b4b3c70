#pragma once

namespace powerctl::cli {

// Builds the Context from the real process (environment, TTYs, std streams) and runs.
int Main(int argc, char** argv);

}  // namespace powerctl::cli
