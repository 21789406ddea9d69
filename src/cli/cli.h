// The `gpucloud` command line: every subcommand is a client of the HTTP API, except `dev`
// (which runs a server and agents) and the internal `shim`.
#pragma once

namespace gpucloud::cli {

/// Parses argv and runs the subcommand; returns the process exit code.
int run_cli(int argc, char** argv);

}  // namespace gpucloud::cli
