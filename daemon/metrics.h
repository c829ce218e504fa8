#pragma once
// A small Prometheus registry: counters (monotonic, named *_total, base
// units), gauges and summaries (quantiles over a sliding window of recent
// observations, with monotonic _sum and _count), rendered in the Prometheus
// text exposition format 0.0.4. Thread-safe: counters and gauges are atomics;
// registration and rendering take a lock.
#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace stripeline::daemon {

class Counter {
 public:
  void add(double v) {
    if (v > 0) value_.fetch_add(v);
  }
  double value() const { return value_.load(); }

 private:
  std::atomic<double> value_{0.0};
};

class Gauge {
 public:
  void set(double v) { value_.store(v); }
  double value() const { return value_.load(); }

 private:
  std::atomic<double> value_{0.0};
};

class Summary {
 public:
  explicit Summary(std::size_t window = 1024) : window_(window) {}
  void observe(double v);
  struct Snapshot {
    std::vector<std::pair<double, double>> quantiles;  // (q, value); NaN when empty
    double sum = 0;
    std::uint64_t count = 0;
  };
  Snapshot snapshot() const;

 private:
  mutable std::mutex mu_;
  std::size_t window_;
  std::deque<double> recent_;
  double sum_ = 0;
  std::uint64_t count_ = 0;
};

// Cumulative buckets with fixed upper bounds (Prometheus histogram): counts
// are added per bucket (not cumulative), rendered cumulative with +Inf.
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds) : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}
  // Adds counts per bucket (bounds.size() + 1 entries, the last above every bound) and their sum.
  void add(const std::vector<std::uint64_t>& per_bucket, double sum);
  struct Snapshot {
    std::vector<std::pair<double, std::uint64_t>> cumulative;  // (le, count), +Inf last
    double sum = 0;
    std::uint64_t count = 0;
  };
  Snapshot snapshot() const;

 private:
  mutable std::mutex mu_;
  std::vector<double> bounds_;
  std::vector<std::uint64_t> counts_;
  double sum_ = 0;
};

class Registry {
 public:
  // labels: Prometheus label text without braces, e.g. reason="hwm". The
  // same name with other labels joins the same family. References stay valid.
  Counter& counter(const std::string& name, const std::string& help, const std::string& labels = "");
  Gauge& gauge(const std::string& name, const std::string& help, const std::string& labels = "");
  Summary& summary(const std::string& name, const std::string& help, std::size_t window = 1024, const std::string& labels = "");
  Histogram& histogram(const std::string& name, const std::string& help, std::vector<double> bounds, const std::string& labels = "");
  // Called before each render (brings collected values up to date).
  void set_collector(std::function<void()> collect);
  std::string render();

 private:
  enum class Type { Counter, Gauge, Summary, Histogram };
  struct Entry {
    std::string labels;
    std::unique_ptr<Counter> counter;
    std::unique_ptr<Gauge> gauge;
    std::unique_ptr<Summary> summary;
    std::unique_ptr<Histogram> histogram;
  };
  struct Family {
    std::string name, help;
    Type type;
    std::vector<std::unique_ptr<Entry>> entries;
  };
  Entry& entry(const std::string& name, const std::string& help, Type type, const std::string& labels);

  std::mutex mu_;
  std::vector<std::unique_ptr<Family>> families_;
  std::function<void()> collect_;
};

// Format a sample value as Prometheus expects (NaN, +Inf, shortest decimal).
std::string prometheus_number(double v);

}  // namespace stripeline::daemon
