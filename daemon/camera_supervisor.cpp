#include "daemon/camera_supervisor.h"

#include <fmt/format.h>

namespace stripeline::daemon {

CameraSupervisor::~CameraSupervisor() { join(); }

void CameraSupervisor::no_camera() {
  std::lock_guard lock(mu_);
  state_ = State::None;
  connected_before_ = false;
}

std::optional<double> CameraSupervisor::opened() {
  std::lock_guard lock(mu_);
  std::optional<double> away;
  if (connected_before_) away = std::chrono::duration<double>(clock::now() - since_).count();
  state_ = State::Connected;
  connected_before_ = true;
  attempts_ = 0;
  since_ = clock::now();
  return away;
}

void CameraSupervisor::lost(const std::string& reason) {
  std::lock_guard lock(mu_);
  state_ = State::Lost;
  since_ = clock::now();
  message_ = reason;
}

bool CameraSupervisor::unavailable(const std::string& message) {
  std::lock_guard lock(mu_);
  if (state_ != State::Lost && state_ != State::Unavailable) since_ = clock::now();
  if (state_ != State::Lost) state_ = State::Unavailable;  // a lost camera stays "lost" while it does not come back
  const bool news = attempts_ == 0 || message_ != message;
  message_ = message;
  ++attempts_;
  return news;
}

CameraSupervisor::State CameraSupervisor::state() const {
  std::lock_guard lock(mu_);
  return state_;
}

bool CameraSupervisor::connected_before() const {
  std::lock_guard lock(mu_);
  return connected_before_;
}

std::uint64_t CameraSupervisor::attempts() const {
  std::lock_guard lock(mu_);
  return attempts_;
}

std::optional<std::string> CameraSupervisor::degraded(double reconnect_interval) const {
  std::lock_guard lock(mu_);
  if (state_ != State::Lost && state_ != State::Unavailable) return std::nullopt;
  const double since = std::chrono::duration<double>(clock::now() - since_).count();
  return fmt::format("degraded: camera {} for {:.1f} s ({}); reconnecting every {} s, {} attempts\n",
                     state_ == State::Lost ? "lost" : "not available", since, message_, reconnect_interval, attempts_);
}

void CameraSupervisor::reap(std::unique_ptr<FrameSource> camera) {
  join();
  reaping_ = true;
  reaper_ = std::thread([this, c = std::move(camera)]() mutable {
    c.reset();
    reaping_ = false;
  });
}

void CameraSupervisor::join() {
  if (reaper_.joinable()) reaper_.join();
}

}  // namespace stripeline::daemon
