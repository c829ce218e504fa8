#pragma once
// Where the daemon's log lines go. Under systemd (JOURNAL_STREAM names this
// process's stderr, or --log journald) they are sent to the journal with
// their priority (spdlog's systemd sink: error -> 3, warn -> 4, info -> 6,
// debug -> 7), so `journalctl -p err` filters; otherwise to stderr with time
// and pid. Standard output is for results only, never log lines.
#include <string>

namespace stripeline::daemon {

enum class LogTarget { Auto, Stderr, Journald };

// "auto", "stderr", "journald"; throws InputError otherwise.
LogTarget parse_log_target(const std::string& text);
// True when JOURNAL_STREAM (set by systemd for a unit's stdout/stderr) names
// the file that stderr is (device:inode), as sd_journal_stream_fd(3) advises.
bool stderr_is_journal();
// Replaces spdlog's default logger (keeping its level). Auto: Journald when
// stderr_is_journal(), else Stderr. Returns the target chosen.
LogTarget setup_daemon_logging(LogTarget target);

}  // namespace stripeline::daemon
