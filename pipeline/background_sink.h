#pragma once
// A sink that does its work on a thread of its own, so that writing files
// (PLY, height maps) is off the pipeline's critical path. It keeps the spans
// it is given: the batch they view stays out of the buffer pool until the
// wrapped sink has consumed it, so nothing is copied and frames in flight are
// still bounded by the pool (a slow writer slows acquisition down, it never
// piles up memory or drops a batch).
//
// The pipeline calls consume_kept() (ProfileSink::keeps_spans); any other
// caller's consume() runs synchronously after the queued spans. An exception
// on the worker is rethrown by the next consume/finish, on the caller's thread.
#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "pipeline/sink.h"

namespace stripeline {

class BackgroundSink final : public ProfileSink {
 public:
  BackgroundSink(std::unique_ptr<ProfileSink> inner, std::string name);
  ~BackgroundSink() override;  // a scan still running is aborted
  BackgroundSink(const BackgroundSink&) = delete;
  BackgroundSink& operator=(const BackgroundSink&) = delete;

  void begin(const ScanInfo& info) override;
  void consume(const ProfileSpan& profiles) override;
  bool keeps_spans() const override { return true; }
  std::size_t batch_bytes_per_frame(int width, int slots) const override { return inner_->batch_bytes_per_frame(width, slots); }
  void consume_kept(const ProfileSpan& profiles, SpanLease& lease) override;
  void finish() override;
  void abort() noexcept override;

  ProfileSink& inner() { return *inner_; }

 private:
  struct Item {
    ProfileSpan span;
    SpanLease* lease;
  };
  void work();
  void stop_worker(bool discard) noexcept;
  void rethrow_failure();
  void wait_idle(std::unique_lock<std::mutex>& lock);

  std::unique_ptr<ProfileSink> inner_;
  std::string name_;
  std::thread worker_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::vector<Item> ring_;  // fixed capacity, allocated once
  std::size_t head_ = 0, size_ = 0;
  bool busy_ = false, stopping_ = false, discard_ = false;
  std::exception_ptr failure_;
};

}  // namespace stripeline
