// A fixed team of threads that renders the frames of one acquisition.
//
// The producer is loaded into other programs' processes (any GenTL
// consumer), so it keeps no global thread pool: a shared scheduler such as
// TBB's would be the consumer's too, and a process that exits while
// acquiring, without GCCloseLib, would tear that scheduler down under the
// acquisition thread. The team belongs to the acquisition and is joined when
// the acquisition ends, before the library's state goes.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <type_traits>
#include <mutex>
#include <thread>
#include <vector>

namespace stripeline::gentl_sim {

class RenderTeam {
 public:
  // `threads` workers in all, the caller included (0: one per core, at most 16).
  explicit RenderTeam(unsigned threads = 0);
  ~RenderTeam();
  RenderTeam(const RenderTeam&) = delete;
  RenderTeam& operator=(const RenderTeam&) = delete;

  // fn(i) for every i in [0, n), spread over the team; returns when all are
  // done and rethrows the first exception one of them threw. One call at a time.
  // `fn` is called through a pointer to it: nothing is allocated per call.
  template <class Fn>
  void for_each(std::uint64_t n, Fn&& fn) {
    run(n, const_cast<void*>(static_cast<const void*>(&fn)),
        [](void* f, std::uint64_t i) { (*static_cast<std::remove_reference_t<Fn>*>(f))(i); });
  }

 private:
  using Call = void (*)(void* fn, std::uint64_t i);
  void run(std::uint64_t n, void* fn, Call call);
  void helper_loop();
  void take_items();

  std::vector<std::thread> helpers_;
  std::mutex mu_;
  std::condition_variable start_cv_, done_cv_;
  void* job_ = nullptr;  // the caller's fn, called through call_
  Call call_ = nullptr;
  std::uint64_t items_ = 0, next_ = 0;  // under mu_: items are few (frames of one buffer), each long
  std::uint64_t round_ = 0;             // bumped per for_each: a helper joins each round once
  unsigned working_ = 0;                // helpers inside the current round
  std::exception_ptr error_;
  bool quit_ = false;
};

}  // namespace stripeline::gentl_sim
