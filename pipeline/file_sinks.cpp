#include "pipeline/file_sinks.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <limits>

#include "core/errors.h"
#include "core/fixed_point.h"
#include "io/image_writer.h"
#include "pipeline/memory_budget.h"
#include "pipeline/scan_metadata.h"
#include "stages/heightmap_filters.h"

namespace stripeline {

PlySink::PlySink(std::filesystem::path path, io::PlyEncoding encoding) : path_(std::move(path)), encoding_(encoding) {}

std::size_t PlySink::batch_bytes_per_frame(int width, int slots) const {
  const std::size_t vertex = encoding_ == io::PlyEncoding::BinaryLittleEndian ? io::kPlyVertexBytes : sizeof(io::PlyVertex);
  return static_cast<std::size_t>(width) * static_cast<std::size_t>(slots) * vertex + sizeof(std::size_t);
}

void PlySink::begin(const ScanInfo& info) {
  mapping_ = ProfileMapping(info.calibration, kDefaultHeightCodeBits, info.sheet);
  // The metadata document (core/metadata.h), then one line a viewer's user
  // reads: what the axes are (docs/calibration.md: the sheet-of-light world frame).
  std::vector<std::string> comments = {metadata::ply_comment(scan_document("point-cloud", info))};
  if (info.sheet)
    comments.push_back("units mm (x across the laser line, y along the motion, z height up toward the sensor; right-handed)");
  else
    comments.push_back(std::string("units ") + info.calibration.unit() +
                       (info.calibration.enabled ? "" : " (x = column, y = frame index, z = row in frame from the top row's centre)"));
  writer_ = std::make_unique<io::PlyWriter>(path_, encoding_, comments);
  chunk_frames_ = std::max(1, info.layout.frames);
  const std::size_t batch_slots = static_cast<std::size_t>(info.layout.width) * info.profile_slots * chunk_frames_;
  if (encoding_ == io::PlyEncoding::BinaryLittleEndian)
    packed_.resize(batch_slots * io::kPlyVertexBytes);
  else
    buffer_.resize(batch_slots);
  counts_.assign(static_cast<std::size_t>(chunk_frames_), 0);
}

namespace {
// Frame f's vertices, each handed to emit(n, vertex) with its rank n in the
// frame; returns how many.
template <class Emit>
std::size_t encode_frame(const ProfileMapping& mapping, const ProfileSpan& p, int f, Emit&& emit) {
  std::size_t n_out = 0;
  const double y = mapping.point_y(p.index(f), p.meta[f]);
  for (int x = 0; x < p.width; ++x) {
    const int n = p.peaks(f, x);
    for (int s = 0; s < n; ++s) {
      const std::size_t i = p.slot_index(f, s, x);
      double X, Y, Z;
      if (!mapping.point(p, f, s, x, y, X, Y, Z)) continue;  // beyond the sheet's horizon: no point
      emit(n_out++, io::PlyVertex{static_cast<float>(X), Y, static_cast<float>(Z), static_cast<float>(p.intensity[i]),
                                  p.quality != nullptr ? static_cast<float>(p.quality[i]) : 0.0f, static_cast<std::uint8_t>(s),
                                  p.stripe_width != nullptr ? p.stripe_width[i] : std::uint16_t{0}});
    }
  }
  return n_out;
}
}  // namespace

// Frames are encoded in parallel, each into its own stretch of a buffer
// (binary: packed as the file holds them), then written in order: the
// writer only moves bytes.
void PlySink::consume(const ProfileSpan& p) {
  const std::size_t stride = static_cast<std::size_t>(p.width) * p.slots;
  const bool binary = encoding_ == io::PlyEncoding::BinaryLittleEndian;
  for (int first = 0; first < p.frames; first += chunk_frames_) {
    const int frames = std::min(chunk_frames_, p.frames - first);
    if (binary && packed_.size() < stride * frames * io::kPlyVertexBytes) packed_.resize(stride * frames * io::kPlyVertexBytes);
    if (!binary && buffer_.size() < stride * frames) buffer_.resize(stride * frames);  // only if a span is wider than begin() said
    tbb::parallel_for(tbb::blocked_range<int>(0, frames), [&](const tbb::blocked_range<int>& r) {
      for (int f = r.begin(); f != r.end(); ++f) {
        if (binary) {
          unsigned char* out = packed_.data() + stride * f * io::kPlyVertexBytes;
          counts_[f] = encode_frame(mapping_, p, first + f,
                                    [out](std::size_t n, const io::PlyVertex& v) { io::pack_ply_vertex(v, out + n * io::kPlyVertexBytes); });
        } else {
          io::PlyVertex* out = buffer_.data() + stride * f;
          counts_[f] = encode_frame(mapping_, p, first + f, [out](std::size_t n, const io::PlyVertex& v) { out[n] = v; });
        }
      }
    });
    for (int f = 0; f < frames; ++f) {
      if (binary)
        writer_->write_records(packed_.data() + stride * f * io::kPlyVertexBytes, counts_[f]);
      else
        writer_->write(buffer_.data() + stride * f, counts_[f]);
      points_ += counts_[f];
    }
  }
}

void PlySink::finish() {
  if (writer_) writer_->finish();
  writer_.reset();
}

void PlySink::abort() noexcept { writer_.reset(); }  // the writer's AtomicFile removes its temporary

namespace {
// What a reader needs to turn the codes back into heights (docs/data-model.md);
// `stripeline describe` and the Python package (python/) read it.
std::string heightmap_description(const ScanInfo& info, int bits, const std::vector<std::string>& filters) {
  metadata::Json d = scan_document("heightmap", info);
  d["height_bits"] = bits;
  d["rounding"] = "half up";
  d["code"] = "0 = no detection; else (position_1/256px + 128 + 2^(7-b)) >> (8-b)";
  d["filters"] = filters;
  // With a sheet-of-light calibration the codes stay sensor rows; the model maps points (docs/calibration.md).
  if (info.sheet) d["calibration_applies_to"] = "points (PLY, XYZ TIFF, range maps), not these row codes";
  return metadata::text(d);
}
}  // namespace

HeightMapSink::HeightMapSink(std::filesystem::path heightmap, std::filesystem::path preview, int bits, std::uint64_t expected_rows)
    : heightmap_(std::move(heightmap)), preview_(std::move(preview)), mapping_(LinearCalibration{}, bits), expected_rows_(expected_rows) {}

void HeightMapSink::begin(const ScanInfo& info) {
  width_ = info.layout.width;
  validate_height_code(mapping_.height_bits(), info.layout.frame_height);
  mapping_ = ProfileMapping(info.calibration, mapping_.height_bits());
  description_ = heightmap_description(info, mapping_.height_bits(), filters_);
  codes_.clear();
  rows_ = 0;
  host_budget_ = info.host_budget;
  device_budget_ = info.device_budget;
  if (expected_rows_ && !filters_.empty()) filter_backend_within_budget(expected_rows_);  // refused before any frame is read
  if (expected_rows_) codes_.reserve(expected_rows_ * static_cast<std::size_t>(width_));
}

void HeightMapSink::consume(const ProfileSpan& p) {
  if (p.width != width_)  // the map's rows must all be as wide as begin() said
    throw RuntimeFailure("height map: a block of width " + std::to_string(p.width) + " in a map of width " + std::to_string(width_));
  const std::size_t at = codes_.size(), w = static_cast<std::size_t>(p.width);
  codes_.resize(at + w * p.frames);  // reserved up front when the length is known
  tbb::parallel_for(tbb::blocked_range<int>(0, p.frames), [&](const tbb::blocked_range<int>& r) {
    for (int f = r.begin(); f != r.end(); ++f) mapping_.code_row(p, f, codes_.data() + at + w * f);
  });
  rows_ += static_cast<std::uint64_t>(p.frames);
}

std::vector<std::uint8_t> make_preview(const std::vector<std::uint16_t>& codes) {
  std::uint16_t lo = std::numeric_limits<std::uint16_t>::max(), hi = 0;
  for (auto c : codes)
    if (c) lo = std::min(lo, c), hi = std::max(hi, c);
  std::vector<std::uint8_t> out(codes.size(), 0);
  const double span = hi > lo ? static_cast<double>(hi - lo) : 1.0;
  for (std::size_t i = 0; i < codes.size(); ++i)
    if (codes[i]) out[i] = static_cast<std::uint8_t>(1 + std::lround((codes[i] - lo) * 254.0 / span));
  return out;
}

void HeightMapSink::set_filters(const std::vector<std::string>& steps, Backend backend) {
  parse_filter_step_list(steps);  // validates now, not at the end of a scan
  filters_ = steps;
  filter_backend_ = resolve_backend(backend);
}

Backend HeightMapSink::filter_backend_within_budget(std::uint64_t rows) const {
  const std::vector<FilterStep> steps = fuse_filter_steps(parse_filter_step_list(filters_));
  const int h = static_cast<int>(std::min<std::uint64_t>(rows, std::numeric_limits<int>::max()));
  const std::uint64_t px = static_cast<std::uint64_t>(width_) * rows;
  Backend backend = filter_backend_;
  if (backend == Backend::Cuda && device_budget_ > 0 && heightmap_filter_memory(Backend::Cuda, width_, h, steps).device > device_budget_) {
    spdlog::warn("height map filters: a {}x{} map needs {} of device memory, device_memory_budget is {}: filtered on the CPU", width_, rows,
                 human_bytes(heightmap_filter_memory(Backend::Cuda, width_, h, steps).device), human_bytes(device_budget_));
    backend = Backend::Cpu;
  }
  // the filtered copy and the preview beside the map, and the filter's own
  const std::uint64_t host = px * 3 + heightmap_filter_memory(backend, width_, h, steps).host;
  if (host_budget_ > 0 && host > host_budget_)
    throw ConfigError(fmt::format("height map filters: a {}x{} map needs {} of host memory, memory_budget is {} (raise --memory-budget, or "
                                  "filter shorter scans)",
                                  width_, rows, human_bytes(host), human_bytes(host_budget_)));
  return backend;
}

void HeightMapSink::finish() {
  if (rows_ == 0) return;  // nothing scanned, nothing written
  const int rows = static_cast<int>(rows_);
  std::vector<std::uint8_t> preview;
  if (!filters_.empty()) {
    // Once per scan, so setting the filters up here is not on the per-frame path.
    const Backend backend = filter_backend_within_budget(rows_);
    std::vector<FilterStep> steps = parse_filter_step_list(filters_);
    std::vector<FilterStep> to8;
    if (steps.back().op == FilterOp::To8) {
      to8.push_back(steps.back());
      steps.pop_back();
    }
    if (!steps.empty()) {
      std::vector<std::uint16_t> filtered(codes_.size());
      make_heightmap_filter(backend, width_, rows, steps)->run(codes_.data(), filtered.data());
      codes_.swap(filtered);
    }
    if (!to8.empty()) {
      preview.resize(codes_.size());
      make_heightmap_filter(backend, width_, rows, to8)->run(codes_.data(), preview.data());
    }
  }
  io::ImageWriteOptions options;
  options.description = description_;
  if (!heightmap_.empty()) io::write_image(heightmap_, codes_.data(), width_, static_cast<std::int64_t>(rows_), PixelFormat::Mono16, options);
  if (!preview_.empty()) {
    if (preview.empty()) preview = make_preview(codes_);
    io::write_image(preview_, preview.data(), width_, static_cast<std::int64_t>(rows_), PixelFormat::Mono8, options);
  }
}

}  // namespace stripeline
