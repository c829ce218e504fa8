// One thread, poll(2), non-blocking sockets, as the HTTP server: see
// viewer_hub.h. A viewer's life: adopted (the response head queued) ->
// messages queued and written as the socket takes them -> closed when the
// client closes, the socket fails, or the hub stops.
#include "daemon/viewer_hub.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <list>
#include <mutex>
#include <thread>
#include <vector>

namespace stripeline::daemon {

namespace {

using clock = std::chrono::steady_clock;
using Message = std::shared_ptr<const std::string>;

struct Viewer {
  int fd = -1;
  std::deque<Message> queue;
  std::size_t written = 0;  // of queue.front()
};

// NaN (no point) becomes null; `round`: whole numbers (intensity, quality).
nlohmann::json numbers(const std::vector<float>& v, bool round) {
  nlohmann::json a = nlohmann::json::array();
  for (const float x : v) {
    if (std::isnan(x))
      a.push_back(nullptr);
    else if (round)
      a.push_back(std::lround(x));
    else
      a.push_back(x);
  }
  return a;
}

std::string event(const char* name, const nlohmann::json& data) { return fmt::format("event: {}\ndata: {}\n\n", name, data.dump()); }

nlohmann::json info_json(const std::string& head, const ViewerInfo& i, const ViewerLimits& l) {
  return {{"head", head}, {"generation", i.generation}, {"width", i.width}, {"bins", i.bins}, {"frame_height", i.frame_height}, {"unit", i.unit},
          {"x0", i.x0}, {"dx", i.dx}, {"calibration", i.calibration}, {"rate", l.rate}};
}

nlohmann::json row_json(const std::string& head, const ViewerRow& r) {
  nlohmann::json j = {{"head", head}, {"index", r.index}, {"frame", r.frame_id}, {"h", numbers(r.heights, false)}, {"i", numbers(r.intensity, true)},
                      {"q", numbers(r.quality, true)}};
  if (!r.x.empty()) j["x"] = numbers(r.x, false);
  return j;
}

// A channel as the hub's thread follows it.
struct Channel {
  ViewerChannel c;
  std::uint64_t generation = 0, row_seq = 0;
  ViewerRow row;
  Message info;
  std::uint64_t rows_before = 0;  // rows_seen() at the last health
};

}  // namespace

class ViewerHub::Impl {
 public:
  Impl(std::vector<ViewerChannel> cs, Registry& registry, ViewerLimits l, std::function<std::string()> h)
      : limits(l),
        health(std::move(h)),
        clients_gauge(registry.gauge("stripeline_viewer_clients", "Live viewers connected to GET /events.")),
        sent(registry.counter("stripeline_viewer_messages_sent_total", "Server-sent events written to live viewers (rows, health, info).")),
        dropped(registry.counter("stripeline_viewer_messages_dropped_total",
                                 "Events a live viewer did not take in time: dropped, oldest first, from its queue (http.viewer_queue).")),
        refused(registry.counter("stripeline_viewer_refused_total", "Live viewers refused: http.max_viewers were connected.")),
        skipped(registry.counter("stripeline_viewer_rows_skipped_total",
                                 "Rows the viewer's tap let pass because the hand-off was busy (the pipeline never waits for it).")) {
    for (auto& c : cs) {
      Channel ch;
      ch.c = std::move(c);
      channels.push_back(std::move(ch));
    }
    wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (wake_fd < 0) throw std::runtime_error(std::string("viewer: eventfd: ") + std::strerror(errno));
    thread = std::thread([this] { loop(); });
  }
  ~Impl() {
    stopping = true;
    wake();
    thread.join();
    for (auto& v : viewers) ::close(v.fd);
    std::lock_guard lock(mu);
    for (int fd : incoming) ::close(fd);
    ::close(wake_fd);
  }

  void wake() {
    const std::uint64_t one = 1;
    (void)!::write(wake_fd, &one, sizeof one);
  }

  std::optional<HttpResponse> adopt(int fd) {
    {
      std::lock_guard lock(mu);
      if (count.load() + static_cast<int>(incoming.size()) >= limits.max_viewers) {
        refused.add(1);
        return HttpResponse{503, fmt::format("too many live viewers ({} connected; http.max_viewers = {}); try again later\n", count.load(),
                                             limits.max_viewers)};
      }
      incoming.push_back(fd);
    }
    wake();
    return std::nullopt;
  }

  void add_new_viewers() {
    std::vector<int> fds;
    {
      std::lock_guard lock(mu);
      fds.swap(incoming);
    }
    for (int fd : fds) {
      Viewer v;
      v.fd = fd;
      // retry: how soon the browser's EventSource reconnects after the daemon went away.
      v.queue.push_back(std::make_shared<const std::string>(
          std::string("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\nConnection: keep-alive\r\n") +
          kSecurityHeaders + "\r\nretry: 1000\n\n"));
      for (const Channel& c : channels)
        if (c.info) v.queue.push_back(c.info);
      if (last_health) v.queue.push_back(last_health);
      viewers.push_back(std::move(v));
    }
    count.store(static_cast<int>(viewers.size()));
  }

  void broadcast(const Message& m) {
    for (auto& v : viewers) {
      // queue_messages a channel: a tick sends a row of each.
      if (v.queue.size() >= static_cast<std::size_t>(limits.queue_messages) * std::max<std::size_t>(1, channels.size())) {
        // Drop the oldest message not yet begun (the front may be half written).
        v.queue.erase(v.queue.begin() + (v.written > 0 ? 1 : 0));
        dropped.add(1);
      }
      v.queue.push_back(m);
    }
  }

  // false: close the viewer.
  bool write_some(Viewer& v) {
    while (!v.queue.empty()) {
      const std::string& m = *v.queue.front();
      const ssize_t n = ::send(v.fd, m.data() + v.written, m.size() - v.written, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR) continue;
        return errno == EAGAIN || errno == EWOULDBLOCK;
      }
      v.written += static_cast<std::size_t>(n);
      if (v.written < m.size()) continue;
      v.queue.pop_front();
      v.written = 0;
      sent.add(1);
    }
    return true;
  }

  // Anything a viewer sends after its request is read and ignored; 0 = it closed.
  static bool read_discard(int fd) {
    char sink[1024];
    while (true) {
      const ssize_t n = ::recv(fd, sink, sizeof sink, 0);
      if (n > 0) continue;
      if (n == 0) return false;
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
  }

  void produce(clock::time_point now) {
    std::uint64_t skipped_now = 0;
    for (Channel& ch : channels) {
      const ViewerInfo info = ch.c.feed->info();
      if (info.generation != ch.generation) {
        ch.generation = info.generation;
        ch.info = std::make_shared<const std::string>(event("info", info_json(ch.c.name, info, limits)));
        broadcast(ch.info);
      }
      if (const std::uint64_t seq = ch.c.feed->take(ch.row_seq, ch.row)) {
        ch.row_seq = seq;
        if (!viewers.empty() && ch.row.heights.size() == static_cast<std::size_t>(info.bins))
          broadcast(std::make_shared<const std::string>(event("row", row_json(ch.c.name, ch.row))));
      }
      skipped_now += ch.c.feed->skipped();
    }
    skipped.add(static_cast<double>(skipped_now) - skipped.value());
    if (now >= next_health) {
      const double seconds = std::chrono::duration<double>(now - last_health_at).count();
      last_health_at = now;
      next_health = now + std::chrono::seconds(1);
      last_health = std::make_shared<const std::string>(event("health", health_json(seconds)));
      broadcast(last_health);
    }
  }

  // The daemon's health, each channel's own figures added to its head's entry
  // (the merged series: "merge"), and the viewers' own beside them.
  nlohmann::json health_json(double seconds) {
    nlohmann::json h;
    try {
      h = nlohmann::json::parse(health ? health() : "{}");
    } catch (const std::exception& e) {
      h = {{"state", std::string("error: ") + e.what()}};
    }
    if (!h.is_object()) h = nlohmann::json::object();
    if (!h.contains("heads") || !h["heads"].is_array()) h["heads"] = nlohmann::json::array();
    for (Channel& ch : channels) {
      const std::uint64_t rows = ch.c.feed->rows_seen();
      nlohmann::json mine = {{"rows_per_s", seconds > 0 && rows >= ch.rows_before ? static_cast<double>(rows - ch.rows_before) / seconds : 0.0},
                             {"calibration", ch.c.feed->info().calibration}};
      ch.rows_before = rows;
      if (const double latency = ch.c.feed->latency_ms(); latency >= 0) mine["latency_ms"] = latency;
      nlohmann::json* entry = nullptr;
      for (auto& e : h["heads"])
        if (e.is_object() && e.value("name", "") == ch.c.name) entry = &e;
      if (!entry && ch.c.name == kMergedChannel) entry = &h["merge"];  // the merged series: beside the heads
      if (!entry) {
        h["heads"].push_back({{"name", ch.c.name}});
        entry = &h["heads"].back();
      }
      if (entry->is_null()) *entry = nlohmann::json::object();
      entry->update(mine);
    }
    h["viewers"] = viewers.size();
    h["viewer_dropped"] = dropped.value();
    h["viewer_skipped"] = skipped.value();
    return h;
  }

  void loop() {
    const auto period = std::chrono::nanoseconds(static_cast<long long>(1e9 / std::max(1.0, limits.rate)));
    auto next_tick = clock::now();
    std::vector<pollfd> fds;
    while (!stopping.load()) {
      fds.clear();
      fds.push_back({wake_fd, POLLIN, 0});
      for (auto& v : viewers) fds.push_back({v.fd, static_cast<short>(POLLIN | (v.queue.empty() ? 0 : POLLOUT)), 0});
      const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next_tick - clock::now()).count();
      const int n = ::poll(fds.data(), fds.size(), static_cast<int>(std::clamp<long long>(wait, 0, 1000)));
      if (n < 0 && errno != EINTR) {
        spdlog::error("viewer: poll failed: {}", std::strerror(errno));
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        continue;
      }
      if (stopping.load()) break;
      if (fds[0].revents & POLLIN) {
        std::uint64_t drained;
        (void)!::read(wake_fd, &drained, sizeof drained);
      }
      // fds[1..] match viewers in order: drop the closed ones as we go.
      std::size_t i = 1;
      for (auto it = viewers.begin(); it != viewers.end(); ++i) {
        const short re = fds[i].revents;
        bool keep = true;
        if (re & (POLLERR | POLLNVAL)) keep = false;
        if (keep && (re & (POLLIN | POLLHUP))) keep = read_discard(it->fd);
        if (keep && (re & POLLOUT)) keep = write_some(*it);
        if (!keep) {
          ::close(it->fd);
          it = viewers.erase(it);
        } else {
          ++it;
        }
      }
      add_new_viewers();
      const auto now = clock::now();
      if (now >= next_tick) {
        next_tick = std::max(next_tick + period, now);
        produce(now);
        for (auto it = viewers.begin(); it != viewers.end();) {
          if (!write_some(*it)) {
            ::close(it->fd);
            it = viewers.erase(it);
          } else {
            ++it;
          }
        }
      }
      count.store(static_cast<int>(viewers.size()));
      clients_gauge.set(static_cast<double>(viewers.size()));
    }
  }

  std::vector<Channel> channels;  // fixed at construction; the hub's thread only
  ViewerLimits limits;
  std::function<std::string()> health;
  Gauge& clients_gauge;
  Counter &sent, &dropped, &refused, &skipped;
  int wake_fd = -1;
  std::atomic<bool> stopping{false};
  std::atomic<int> count{0};
  std::mutex mu;
  std::vector<int> incoming;  // mu: adopted, not yet served
  // The hub's thread only.
  std::list<Viewer> viewers;
  Message last_health;
  clock::time_point next_health{}, last_health_at = clock::now();
  std::thread thread;
};

ViewerHub::ViewerHub(std::vector<ViewerChannel> channels, Registry& registry, ViewerLimits limits, std::function<std::string()> health)
    : impl_(std::make_unique<Impl>(std::move(channels), registry, limits, std::move(health))) {}

ViewerHub::~ViewerHub() = default;

std::optional<HttpResponse> ViewerHub::adopt(int fd) { return impl_->adopt(fd); }

int ViewerHub::viewers() const { return impl_->count.load(); }

}  // namespace stripeline::daemon
