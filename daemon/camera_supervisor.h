#pragma once
// What the daemon knows of its camera between and during pipelines: whether
// it streams, is lost or cannot be opened, since when and why, how many
// attempts were made; and the closing of lost cameras. A lost camera is
// closed on a thread of its own (the reaper): Aravis spends seconds retrying
// a camera that is gone, and the daemon must stay responsive. It must be
// fully closed before the camera is opened again (closing sends "leave
// control", which would otherwise hit the new session).
//
// Thread-safety: every member function may be called from any thread; one
// mutex of its own guards the state. It never calls back into the daemon.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "acquisition/source.h"

namespace stripeline::daemon {

class CameraSupervisor {
 public:
  enum class State { None, Connected, Lost, Unavailable };
  CameraSupervisor() = default;
  ~CameraSupervisor();
  CameraSupervisor(const CameraSupervisor&) = delete;
  CameraSupervisor& operator=(const CameraSupervisor&) = delete;

  // The source is not a camera (a reload moved off it).
  void no_camera();
  // The camera opened. Returns the seconds it was away when this is a
  // reconnection (it had streamed before), nullopt for a first connection.
  std::optional<double> opened();
  // It stopped answering (`reason`, from the camera source).
  void lost(const std::string& reason);
  // Opening failed (not found, or a replaced camera refused a setting).
  // Returns true when the message differs from the last one (worth logging).
  bool unavailable(const std::string& message);

  State state() const;
  bool connected() const { return state() == State::Connected; }
  // True once a camera has streamed in this process.
  bool connected_before() const;
  std::uint64_t attempts() const;
  // The /healthz text while degraded (lost or unavailable), nullopt otherwise.
  std::optional<std::string> degraded(double reconnect_interval) const;

  // Closes `camera` on the reaper thread (after the previous one finished).
  void reap(std::unique_ptr<FrameSource> camera);
  bool reaping() const { return reaping_.load(); }
  // Waits for the reaper thread.
  void join();

 private:
  using clock = std::chrono::steady_clock;
  mutable std::mutex mu_;
  State state_ = State::None;
  std::string message_;
  clock::time_point since_ = clock::now();
  std::uint64_t attempts_ = 0;
  bool connected_before_ = false;

  std::thread reaper_;
  std::atomic<bool> reaping_{false};
};

}  // namespace stripeline::daemon
