#pragma once
// A ZeroMQ context whose I/O thread runs with the given scheduling (its
// options must be set before the context's first socket starts that thread).
#include <string>

#include <zmq.hpp>

#include "core/thread_scheduling.h"

namespace stripeline {

// libzmq aborts the process when its I/O thread cannot take the policy, so
// this checks it first: ConfigError naming `key` (validate, check_permitted)
// when the scheduling is not the default and cannot be had.
zmq::context_t make_zmq_context(const ThreadScheduling& scheduling, const std::string& key, int io_threads = 1);

}  // namespace stripeline
