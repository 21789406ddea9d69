// Small file helpers for the process executor and its shim: whole-file reads, atomic writes.
#pragma once

#include <string>

#include "common/result.h"

namespace gpucloud::exec {

/// Reads a whole file. A missing file is kNotFound; other failures are kInternal.
Result<std::string> read_file(const std::string& path);

/// Writes `content` to `path` atomically: a temporary file beside it, fsync, rename, fsync of
/// the directory. Readers see either the old file or the complete new one, even after a crash.
/// With durable false there is no fsync: the file survives a crash of the process that wrote
/// it (the page cache does), not one of the machine.
Status write_file_atomic(const std::string& path, const std::string& content, int mode = 0640,
                         bool durable = true);

/// Writes a file in place, without fsync: for files written once before anyone reads them and
/// that matter only while the processes they describe exist (launch.json, pid).
Status write_file_in_place(const std::string& path, const std::string& content, int mode = 0640);

/// Creates a directory and its missing parents with `mode` (like `mkdir -p`).
Status make_dirs(const std::string& path, int mode);

/// True when `path` exists (any file type).
bool path_exists(const std::string& path);

/// "what: strerror(errno)" for the current errno.
std::string errno_message(const std::string& what);

}  // namespace gpucloud::exec
