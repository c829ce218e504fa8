#pragma once
// A device lane: one non-blocking stream with the events every CUDA user of
// stripeline needs around it. Work is enqueued on stream(); record_done()
// marks the end of what was enqueued, wait() blocks until it is done, and the
// timing events bracket the kernels of one batch. The destructor waits for
// what is still queued (logging, never throwing), so no device buffer a lane's
// owner frees can still be in use by its stream.
//
// Not thread-safe: one thread per lane at a time.
#include <cuda_runtime_api.h>

#include <functional>

#include "core/cuda/runtime.h"

namespace stripeline::cuda {

class DeviceLane {
 public:
  enum class Wait {
    Sleep,  // blocking-sync event: the waiting thread sleeps (throughput batches)
    Spin,   // the waiting thread spins: microseconds sooner, a busy core (low latency)
  };
  explicit DeviceLane(Wait wait = Wait::Sleep)
      : stream_(Stream::create()),
        done_(wait == Wait::Spin ? Event::create_spin() : Event::create_sync()),
        start_(Event::create_timing()),
        stop_(Event::create_timing()) {}
  DeviceLane(DeviceLane&&) = default;
  DeviceLane& operator=(DeviceLane&&) = default;
  ~DeviceLane() {
    if (stream_) STRIPELINE_CUDA_LOG(cudaStreamSynchronize(stream_));
  }

  cudaStream_t stream() const { return stream_; }

  // Brackets of the timed part (kernels of one batch). Inside capture() the
  // records are "external": event record nodes of the graph, so the host can
  // wait on and time the events of each replay (a plain record there would
  // only order the graph's own nodes; the flag is refused outside capture).
  void record_start() { record(start_); }
  void record_stop() { record(stop_); }
  // Milliseconds between the last recorded start and stop; both must be complete.
  float elapsed() const { return elapsed_ms(start_, stop_); }
  // Blocks until the last recorded stop is complete (timed work without copies).
  void wait_stop() { STRIPELINE_CUDA_CHECK(cudaEventSynchronize(stop_)); }

  // Everything enqueued so far is done once wait() returns.
  void record_done() { record(done_); }
  void wait() { STRIPELINE_CUDA_CHECK(cudaEventSynchronize(done_)); }
  // What `enqueue` puts on the lane's stream, as a graph (GraphExec::capture).
  GraphExec capture(const std::function<void()>& enqueue) {
    capturing_ = true;
    struct Reset {
      bool& flag;
      ~Reset() { flag = false; }
    } reset{capturing_};
    return GraphExec::capture(stream_, enqueue);
  }

  // record_done() + wait().
  void finish() {
    record_done();
    wait();
  }

 private:
  void record(cudaEvent_t event) {
    STRIPELINE_CUDA_CHECK(cudaEventRecordWithFlags(event, stream_, capturing_ ? cudaEventRecordExternal : cudaEventRecordDefault));
  }

  Stream stream_;
  Event done_, start_, stop_;
  bool capturing_ = false;
};

}  // namespace stripeline::cuda
