// SPDX-License-Identifier: Apache-2.0
#pragma once
// The files the measuring tools write (symmem-tune's table and CSV, symmem-health's CSV): whether they
// can be written, asked before a measurement that can take an hour rather than after it; whether two
// names are one file; and the write itself, to a temporary name renamed into place, so that a reader
// never sees half a table and an interrupted run leaves the old file whole.
#include <string>

namespace symmem {

// "" when a file can be created or replaced at `path`, else why not ("directory /x: No such file or
// directory", "/tmp is a directory"). Creates nothing.
std::string tuneOutputProblem(const std::string& path);

// Whether `a` and `b` name one file: the same device and inode when the file exists, else the same
// name in the same directory (its links resolved): "./x.txt" and "x.txt", "d/../x" and "x".
bool sameOutputFile(const std::string& a, const std::string& b);

// Writes `text` to `path` through a new file beside it ("path.tmp-<pid>"), then renames it over
// `path`. "" when done, else what went wrong (the temporary file is then removed).
std::string writeFileByRename(const std::string& path, const std::string& text);

}  // namespace symmem
