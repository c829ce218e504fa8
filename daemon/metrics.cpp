#include "daemon/metrics.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/errors.h"

namespace stripeline::daemon {

void Summary::observe(double v) {
  std::lock_guard lock(mu_);
  recent_.push_back(v);
  if (recent_.size() > window_) recent_.pop_front();
  sum_ += v;
  ++count_;
}

Summary::Snapshot Summary::snapshot() const {
  std::lock_guard lock(mu_);
  Snapshot s;
  s.sum = sum_;
  s.count = count_;
  std::vector<double> sorted(recent_.begin(), recent_.end());
  std::sort(sorted.begin(), sorted.end());
  for (double q : {0.5, 0.9, 0.99}) {
    double v = std::nan("");
    if (!sorted.empty()) v = sorted[std::min(sorted.size() - 1, static_cast<std::size_t>(q * static_cast<double>(sorted.size())))];
    s.quantiles.emplace_back(q, v);
  }
  return s;
}

void Histogram::add(const std::vector<std::uint64_t>& per_bucket, double sum) {
  std::lock_guard lock(mu_);
  for (std::size_t i = 0; i < counts_.size() && i < per_bucket.size(); ++i) counts_[i] += per_bucket[i];
  sum_ += sum;
}

Histogram::Snapshot Histogram::snapshot() const {
  std::lock_guard lock(mu_);
  Snapshot s;
  s.sum = sum_;
  for (std::size_t i = 0; i < counts_.size(); ++i) {
    s.count += counts_[i];
    s.cumulative.emplace_back(i < bounds_.size() ? bounds_[i] : INFINITY, s.count);
  }
  return s;
}

std::string prometheus_number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

Registry::Entry& Registry::entry(const std::string& name, const std::string& help, Type type, const std::string& labels) {
  std::lock_guard lock(mu_);
  Family* fam = nullptr;
  for (auto& f : families_)
    if (f->name == name) fam = f.get();
  if (!fam) {
    families_.push_back(std::make_unique<Family>(Family{name, help, type, {}}));
    fam = families_.back().get();
  }
  if (fam->type != type) throw RuntimeFailure("metrics: " + name + " registered with two types");
  for (auto& e : fam->entries)
    if (e->labels == labels) return *e;
  auto e = std::make_unique<Entry>();
  e->labels = labels;
  if (type == Type::Counter) e->counter = std::make_unique<Counter>();
  if (type == Type::Gauge) e->gauge = std::make_unique<Gauge>();
  fam->entries.push_back(std::move(e));
  return *fam->entries.back();
}

Counter& Registry::counter(const std::string& name, const std::string& help, const std::string& labels) {
  return *entry(name, help, Type::Counter, labels).counter;
}
Gauge& Registry::gauge(const std::string& name, const std::string& help, const std::string& labels) {
  return *entry(name, help, Type::Gauge, labels).gauge;
}
Summary& Registry::summary(const std::string& name, const std::string& help, std::size_t window, const std::string& labels) {
  Entry& e = entry(name, help, Type::Summary, labels);
  std::lock_guard lock(mu_);
  if (!e.summary) e.summary = std::make_unique<Summary>(window);
  return *e.summary;
}

Histogram& Registry::histogram(const std::string& name, const std::string& help, std::vector<double> bounds, const std::string& labels) {
  Entry& e = entry(name, help, Type::Histogram, labels);
  std::lock_guard lock(mu_);
  if (!e.histogram) e.histogram = std::make_unique<Histogram>(std::move(bounds));
  return *e.histogram;
}

void Registry::set_collector(std::function<void()> collect) {
  std::lock_guard lock(mu_);
  collect_ = std::move(collect);
}

std::string Registry::render() {
  std::function<void()> collect;
  {
    std::lock_guard lock(mu_);
    collect = collect_;
  }
  if (collect) collect();
  std::lock_guard lock(mu_);
  std::string out;
  for (const auto& f : families_) {
    const char* type = f->type == Type::Counter ? "counter" : f->type == Type::Gauge ? "gauge" : f->type == Type::Summary ? "summary" : "histogram";
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", f->name, f->help, f->name, type);
    for (const auto& e : f->entries) {
      const std::string labels = e->labels.empty() ? "" : "{" + e->labels + "}";
      if (e->counter) out += fmt::format("{}{} {}\n", f->name, labels, prometheus_number(e->counter->value()));
      if (e->gauge) out += fmt::format("{}{} {}\n", f->name, labels, prometheus_number(e->gauge->value()));
      const std::string first = e->labels.empty() ? "" : e->labels + ",";  // before quantile= and le=
      if (e->summary) {
        const auto s = e->summary->snapshot();
        for (const auto& [q, v] : s.quantiles) out += fmt::format("{}{{{}quantile=\"{}\"}} {}\n", f->name, first, q, prometheus_number(v));
        out += fmt::format("{}_sum{} {}\n{}_count{} {}\n", f->name, labels, prometheus_number(s.sum), f->name, labels, s.count);
      }
      if (e->histogram) {
        const auto h = e->histogram->snapshot();
        for (const auto& [le, n] : h.cumulative) out += fmt::format("{}_bucket{{{}le=\"{}\"}} {}\n", f->name, first, prometheus_number(le), n);
        out += fmt::format("{}_sum{} {}\n{}_count{} {}\n", f->name, labels, prometheus_number(h.sum), f->name, labels, h.count);
      }
    }
  }
  return out;
}

}  // namespace stripeline::daemon
