#pragma once
// SIGINT and SIGTERM for the commands (the daemon handles its own on a signal
// thread, daemon/signals.h).
//  - Every command (main() installs it): the signal removes this process's
//    temporaries (io::remove_live_temporaries) and ends it as the signal would
//    (killed by SIGINT/SIGTERM: a shell shows 130/143). Nothing half-written
//    is left, under any name. std::terminate (an exception escaping a
//    thread) removes them too before aborting.
//  - run and replay (GracefulStop, while it lives): the first signal stops
//    acquiring (the source and the pipeline) and says so on stderr; the
//    batches in flight go through the sinks and the files are finished with
//    what was acquired. A second signal aborts at once as above.
// The handlers only store atomics, call write(2) and unlink(2).
#include <atomic>

#include "acquisition/source.h"
#include "pipeline/pipeline.h"

namespace stripeline::tools {

// Exit status of run/replay stopped by SIGINT/SIGTERM before a finite
// source's end: the files are complete and hold what was acquired. (An
// endless source stopped that way exits 0: stopping is how it ends.)
constexpr int kExitInterrupted = 3;

void install_cleanup_on_signal();

class GracefulStop {
 public:
  GracefulStop();
  ~GracefulStop();
  GracefulStop(const GracefulStop&) = delete;
  GracefulStop& operator=(const GracefulStop&) = delete;
  // What a signal stops; a signal that came before is applied now.
  void attach(FrameSource* source, Pipeline* pipeline);
  void detach();
  // The signal that stopped the run (SIGINT, SIGTERM), or 0.
  int signal() const;
};

// "SIGINT", "SIGTERM", or "signal N".
const char* signal_name(int sig);

}  // namespace stripeline::tools
