#include "daemon/heads_viewer.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "daemon/viewer_assets.h"
#include "streaming/subscriber.h"

namespace stripeline::daemon {

namespace {
constexpr int kMaxColumns = 1024;  // as the single head's (daemon.cpp)
constexpr double kRate = 25.0;
}  // namespace

// The merged series into its ViewerFeed: a SUB socket on the merge's
// published stream (reconnected when the endpoint changes), its rectified
// heightmap rows handed to the feed (which keeps about 25 a second).
class HeadsViewer::MergedTap {
 public:
  MergedTap(ViewerFeed& feed, std::function<std::string()> endpoint) : feed_(feed), endpoint_(std::move(endpoint)) {
    thread_ = std::thread([this] { loop(); });
  }
  ~MergedTap() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

 private:
  bool wait(std::chrono::milliseconds d) {
    std::unique_lock lock(mu_);
    return !cv_.wait_for(lock, d, [this] { return stop_; });
  }
  bool stopping() {
    std::lock_guard lock(mu_);
    return stop_;
  }

  // A rectified message's grid: a new run of the feed when it changed.
  void follow_grid(const nlohmann::json& header, int cells) {
    const auto g = header.find("grid");
    if (g == header.end() || !g->is_object()) return;
    const double x_min = g->value("x_min", 0.0), dx = g->value("dx", 1.0);
    if (cells == cells_ && x_min == x_min_ && dx == dx_) return;
    cells_ = cells, x_min_ = x_min, dx_ = dx;
    feed_.begin_grid(cells, x_min, dx, "mm", "merged (world frame, merge.transforms)");
  }

  void on_message(const wire::Decoded& m) {
    if (m.topic == wire::Topic::SeriesStart) {
      follow_grid(m.header, m.header.value("width", 0));
      return;
    }
    if (m.topic != wire::Topic::Heightmap || !m.rows || m.header.value("form", "") != "rectified") return;
    const wire::RowBlock& b = *m.rows;
    follow_grid(m.header, b.width);
    if (b.slots != 1 || b.frame_ids.size() != static_cast<std::size_t>(b.rows) ||
        b.z.size() != static_cast<std::size_t>(b.rows) * static_cast<std::size_t>(b.width))
      return;  // not the merged rows' shape (rectified: one slot)
    feed_.consume_grid(b.index, b.frame_ids.data(), b.z.data(), b.rows, b.width,
                       b.missing.size() == static_cast<std::size_t>(b.rows) ? b.missing.data() : nullptr);
  }

  void loop() {
    std::unique_ptr<Subscriber> sub;
    std::string current;
    while (!stopping()) {
      const std::string ep = endpoint_();
      if (ep.empty()) {
        if (!wait(std::chrono::milliseconds(200))) break;
        continue;
      }
      if (ep != current) {
        sub.reset();
        try {
          sub = std::make_unique<Subscriber>(SubscriberOptions{ep, 1000, "", ""});
          current = ep;
        } catch (const std::exception& e) {
          spdlog::warn("viewer: cannot follow the merged series on {}: {}", ep, e.what());
          current.clear();
          if (!wait(std::chrono::seconds(1))) break;
          continue;
        }
      }
      if (auto m = sub->receive(std::chrono::milliseconds(200))) on_message(*m);
    }
  }

  ViewerFeed& feed_;
  std::function<std::string()> endpoint_;
  int cells_ = 0;  // the tap's thread only
  double x_min_ = 0, dx_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;
};

HeadsViewer::HeadsViewer(const std::vector<std::string>& heads, bool merged) : names_(heads), merged_(merged) {
  for (std::size_t i = 0; i < heads.size() + (merged ? 1 : 0); ++i) feeds_.push_back(std::make_unique<ViewerFeed>(kMaxColumns, kRate));
}

HeadsViewer::~HeadsViewer() {
  hub_.reset();  // its thread calls the health callback: first
  tap_.reset();
}

void HeadsViewer::start(Registry& registry, const HttpConfig& http, std::function<std::string()> health,
                        std::function<std::string()> merged_endpoint, std::map<std::string, HttpServer::Handler>& routes,
                        std::map<std::string, HttpServer::StreamHandler>& streams) {
  std::vector<ViewerChannel> channels;
  for (std::size_t i = 0; i < names_.size(); ++i) channels.push_back({names_[i], feeds_[i].get()});
  if (merged_) {
    channels.push_back({kMergedChannel, feeds_.back().get()});
    tap_ = std::make_unique<MergedTap>(*feeds_.back(), std::move(merged_endpoint));
  }
  ViewerLimits limits;
  limits.max_viewers = http.max_viewers;
  limits.rate = kRate;
  hub_ = std::make_unique<ViewerHub>(std::move(channels), registry, limits, std::move(health));
  routes.merge(viewer_routes());
  streams["/events"] = [this](int fd) { return hub_->adopt(fd); };
}

}  // namespace stripeline::daemon
