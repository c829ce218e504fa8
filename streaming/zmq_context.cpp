#include "streaming/zmq_context.h"

#include <sched.h>

namespace stripeline {

zmq::context_t make_zmq_context(const ThreadScheduling& scheduling, const std::string& key, int io_threads) {
  scheduling.validate(key);
  scheduling.check_permitted(key);
  zmq::context_t ctx(io_threads);
  if (scheduling.fifo_priority > 0) {
    ctx.set(zmq::ctxopt::thread_sched_policy, SCHED_FIFO);
    ctx.set(zmq::ctxopt::thread_priority, scheduling.fifo_priority);
  }
  for (int c : scheduling.cpus) zmq_ctx_set(ctx.handle(), ZMQ_THREAD_AFFINITY_CPU_ADD, c);
  return ctx;
}

}  // namespace stripeline
