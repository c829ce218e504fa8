// GenTLCamera's data stream: buffers announced (the pool's, on the direct
// path), queued, revoked; the delivery path chosen at the first fill().
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>

#include "acquisition/gentl/gentl_camera_impl.h"

namespace stripeline::gentl_detail {

// The data stream is opened before configuring: its own features (buffer
// layout on some grabbers) are part of the set-up.
void GenTLCameraImpl::open_data_stream() {
  const auto& api = producer_->api();
  std::uint32_t n = 0;
  if (api.DevGetNumDataStreams) producer_->check(api.DevGetNumDataStreams(device_, &n), "DevGetNumDataStreams");
  if (api.DevGetNumDataStreams && n == 0) throw DeviceUnavailable(fmt::format("GenTL device {}: it has no data stream", device_id_));
  const std::string ds = gentl::info_string(*producer_, "DevGetDataStreamID", [&](INFO_DATATYPE*, void* b, std::size_t* s) {
    return api.DevGetDataStreamID(device_, 0, static_cast<char*>(b), s);
  });
  producer_->check(api.DevOpenDataStream(device_, ds.c_str(), &stream_), "DevOpenDataStream");
}

void GenTLCameraImpl::prepare_stream() {
  const auto& api = producer_->api();
  // The buffer size: the stream's when it defines it (a grabber's
  // multi-frame buffer), else the camera's PayloadSize.
  bool8_t defines = 0;
  std::size_t size = sizeof defines;
  INFO_DATATYPE type = 0;
  if (api.DSGetInfo(stream_, STREAM_INFO_DEFINES_PAYLOADSIZE, &type, &defines, &size) == GC_ERR_SUCCESS && defines) {
    payload_ = gentl::info_value<std::size_t>(*producer_, "DSGetInfo(PAYLOAD_SIZE)", [&](INFO_DATATYPE* t, void* b, std::size_t* s) {
      return api.DSGetInfo(stream_, STREAM_INFO_PAYLOAD_SIZE, t, b, s);
    });
  } else {
    payload_ = static_cast<std::size_t>(arv_device_get_integer_feature_value(camera_->device(), "PayloadSize", nullptr));
  }
  const std::size_t need = frame_bytes_ * static_cast<std::size_t>(frames_per_buffer_);
  if (payload_ < need)
    throw DeviceUnavailable(fmt::format("GenTL device {}: payload {} bytes is less than {} frame(s) of {}x{} ({} bytes)", device_id_, payload_,
                                        frames_per_buffer_, settings_.width, settings_.height, need));
  producer_->check(api.GCRegisterEvent(stream_, EVENT_NEW_BUFFER, &new_buffer_event_), "GCRegisterEvent(NEW_BUFFER)");
  if (api.GCRegisterEvent(stream_, EVENT_ERROR, &error_event_) != GC_ERR_SUCCESS) error_event_ = nullptr;  // optional
}

void GenTLCameraImpl::attach_buffers(std::span<Batch* const> batches, HostAllocator allocator) {
  if (started_) {
    spdlog::warn("gentl: buffers attached after the first batch: ignored");
    return;
  }
  attached_.assign(batches.begin(), batches.end());
  if (allocator) allocator_ = allocator;
  publish();  // the path it will take, for a report read before the first fill
}

// Why the pool's buffers cannot be the grabber's ("" = they can).
std::string GenTLCameraImpl::why_not_direct(const Batch& first) const {
  if (!config_.direct_buffers) return "camera.direct_buffers = false";
  if (attached_.empty()) return "the pipeline attached no buffers";
  if (first.layout.frames != frames_per_buffer_)
    return fmt::format("a batch is {} frames (processing.batch_frames), a grabber buffer {} (camera.gentl.frames_per_buffer): set them equal",
                       first.layout.frames, frames_per_buffer_);
  for (const Batch* b : attached_)
    if (b->pixels.size() < payload_ || b->layout.width != layout_.width || b->layout.frame_height != layout_.frame_height ||
        b->layout.format != layout_.format)
      return fmt::format("a pool buffer holds {} bytes, a grabber buffer needs {}", b->pixels.size(), payload_);
  return {};
}

// Announces every pool buffer to the data stream. A producer that cannot take
// our memory (DSAnnounceBuffer refused) gets them all revoked again: false.
bool GenTLCameraImpl::announce_pool() {
  const auto& api = producer_->api();
  for (const Batch* b : attached_) {
    std::byte* p = b->pixels.data();
    BUFFER_HANDLE h = nullptr;
    const GC_ERROR rc = api.DSAnnounceBuffer(stream_, p, b->pixels.size(), p, &h);
    if (rc == GC_ERR_SUCCESS) {
      announced_[p] = h;
      continue;
    }
    spdlog::warn("gentl: copy path: the producer cannot announce the pipeline's memory (DSAnnounceBuffer: {} {})", gentl::error_name(rc),
                 producer_->last_error_text());
    for (auto& [mem, handle] : announced_) {
      void* m = nullptr;
      void* priv = nullptr;
      api.DSRevokeBuffer(stream_, handle, &m, &priv);
    }
    announced_.clear();
    return false;
  }
  return true;
}

// Decides the path, allocates and queues our buffers, starts the stream.
void GenTLCameraImpl::start(const Batch& first) {
  started_ = true;
  const auto& api = producer_->api();
  const std::string why = why_not_direct(first);
  direct_ = why.empty() && announce_pool();
  // Said once per opening: the copy path costs a copy of every frame.
  if (!why.empty() && !attached_.empty()) spdlog::warn("gentl: copy path: {}", why);
  if (!why.empty() && attached_.empty()) spdlog::info("gentl: copy path: {}", why);
  std::size_t spare_bytes = payload_;
  if (direct_)
    for (const Batch* b : attached_) spare_bytes = std::max(spare_bytes, b->pixels.size());
  for (int i = 0; i < gentl_.buffers; ++i) announce_spare(spare_bytes);
  spdlog::info("gentl: {} ({} buffers of {} bytes queued{})",
               direct_ ? "zero copy: the grabber writes into the pipeline's batches" : "frames copied into batches", gentl_.buffers, spare_bytes,
               producer_owned_.empty() ? "" : ", allocated by the producer");
  producer_->check(api.DSStartAcquisition(stream_, ACQ_START_FLAGS_DEFAULT, GENTL_INFINITE), "DSStartAcquisition");
  acquiring_ = true;
  {
    std::lock_guard lock(feature_mu_);
    if (camera_->has("TLParamsLocked")) arv_device_set_integer_feature_value(camera_->device(), "TLParamsLocked", 1, nullptr);
    if (camera_->has("AcquisitionStart")) {
      Err err;
      arv_device_execute_command(camera_->device(), "AcquisitionStart", err.out());
      if (err) throw DeviceUnavailable(fmt::format("camera {}: AcquisitionStart failed: {}", settings_.id, err.message()));
    }
  }
  last_alive_ns_ = now_ns();
  if (config_.trigger == TriggerMode::Software) trigger_.start(features_, config_.frame_rate, lost_, feature_mu_);
}

void GenTLCameraImpl::announce_spare(std::size_t bytes) {
  const auto& api = producer_->api();
  BUFFER_HANDLE h = nullptr;
  if (producer_owned_.empty()) {
    HostBuffer buffer = allocator_(bytes);
    std::byte* p = buffer.data();
    const GC_ERROR rc = api.DSAnnounceBuffer(stream_, p, buffer.size(), p, &h);
    if (rc == GC_ERR_SUCCESS) {
      announced_[p] = h;
      owned_.emplace(p, std::move(buffer));
      queue(p);
      return;
    }
    // The zero-copy path hands these buffers on as batches: they must be ours.
    if (direct_ || !owned_.empty()) producer_->check(rc, "DSAnnounceBuffer");
    spdlog::warn("gentl: the producer does not take our memory (DSAnnounceBuffer: {} {}): its own buffers (DSAllocAndAnnounceBuffer), "
                 "frames copied from them",
                 gentl::error_name(rc), producer_->last_error_text());
  }
  producer_->check(api.DSAllocAndAnnounceBuffer(stream_, bytes, nullptr, &h), "DSAllocAndAnnounceBuffer");
  void* base = nullptr;
  std::size_t size = sizeof base;
  INFO_DATATYPE type = 0;
  if (api.DSGetBufferInfo(stream_, h, BUFFER_INFO_BASE, &type, &base, &size) != GC_ERR_SUCCESS || base == nullptr) {
    void* mem = nullptr;
    void* priv = nullptr;
    api.DSRevokeBuffer(stream_, h, &mem, &priv);
    throw DeviceUnavailable(fmt::format("camera {}: the producer allocated a buffer but gives no address for it (BUFFER_INFO_BASE: {})",
                                        settings_.id, producer_->last_error_text()));
  }
  auto* p = static_cast<std::byte*>(base);
  announced_[p] = h;
  producer_owned_.insert(p);
  queue(p);
}

void GenTLCameraImpl::queue(std::byte* memory) {
  const auto it = announced_.find(memory);
  if (it == announced_.end()) throw RuntimeFailure("gentl: a buffer to queue was never announced (a batch that was not attached?)");
  producer_->check(producer_->api().DSQueueBuffer(stream_, it->second), "DSQueueBuffer");
}

// Stops the grabber writing, takes every buffer back (revoked), closes the
// stream. Idempotent; never throws.
void GenTLCameraImpl::shutdown_stream() noexcept {
  trigger_.stop();
  if (!stream_) return;
  const auto& api = producer_->api();
  if (acquiring_) {
    std::lock_guard lock(feature_mu_);
    if (camera_ && camera_->has("AcquisitionStop")) arv_device_execute_command(camera_->device(), "AcquisitionStop", nullptr);
    if (camera_ && camera_->has("TLParamsLocked")) arv_device_set_integer_feature_value(camera_->device(), "TLParamsLocked", 0, nullptr);
    if (api.DSStopAcquisition(stream_, ACQ_STOP_FLAGS_KILL) != GC_ERR_SUCCESS) spdlog::debug("gentl: DSStopAcquisition: {}", producer_->last_error_text());
    acquiring_ = false;
  }
  api.DSFlushQueue(stream_, ACQ_QUEUE_ALL_DISCARD);
  for (auto& [p, h] : announced_) {
    void* mem = nullptr;
    void* priv = nullptr;
    if (api.DSRevokeBuffer(stream_, h, &mem, &priv) != GC_ERR_SUCCESS) spdlog::debug("gentl: DSRevokeBuffer: {}", producer_->last_error_text());
  }
  announced_.clear();
  producer_owned_.clear();  // revoked above: the producer frees them
  pending_.reset();
  if (new_buffer_event_ && api.GCUnregisterEvent) api.GCUnregisterEvent(stream_, EVENT_NEW_BUFFER);
  if (error_event_ && api.GCUnregisterEvent) api.GCUnregisterEvent(stream_, EVENT_ERROR);
  new_buffer_event_ = error_event_ = nullptr;
  modules_.erase("Stream");
  if (api.DSClose) api.DSClose(stream_);
  stream_ = nullptr;
}

GenTLCameraImpl::~GenTLCameraImpl() {
  std::lock_guard setup(gentl::setup_mutex());
  shutdown_stream();
  modules_.clear();
  camera_.reset();
  if (device_ && producer_->api().DevClose) producer_->api().DevClose(device_);
}

void GenTLCameraImpl::declare_lost(const std::string& why) {
  if (lost_.exchange(true)) return;
  loss_seconds_ = (now_ns() - last_alive_ns_) / 1e9;
  {
    std::lock_guard lock(published_mu_);
    loss_reason_ = why;
  }
  spdlog::error("GenTL camera {}: lost: {}", settings_.id, why);
}

// ---------------------------------------------------------------------------
// Streaming.

void GenTLCameraImpl::poll_error_events() {
  if (!error_event_) return;
  const auto& api = producer_->api();
  std::array<char, 2048> data{};
  while (true) {
    std::size_t size = data.size();
    if (api.EventGetData(error_event_, data.data(), &size, 0) != GC_ERR_SUCCESS) return;
    ++error_events_;
    std::string text;
    if (api.EventGetDataInfo) {
      GC_ERROR code = 0;
      std::size_t n = sizeof code;
      INFO_DATATYPE t = 0;
      api.EventGetDataInfo(error_event_, data.data(), size, EVENT_DATA_ID, &t, &code, &n);
      char msg[1024] = {};
      n = sizeof msg;
      api.EventGetDataInfo(error_event_, data.data(), size, EVENT_DATA_VALUE, &t, msg, &n);
      msg[sizeof msg - 1] = '\0';
      text = fmt::format("{} ({}): {}", gentl::error_name(code), code, msg);
    }
    last_error_event_ = text;
    spdlog::warn("GenTL camera {}: the producer reports an error: {}", settings_.id, text);
  }
}

Delivered GenTLCameraImpl::describe_buffer(BUFFER_HANDLE h) {
  const auto& api = producer_->api();
  auto info = [&](BUFFER_INFO_CMD cmd, auto fallback) {
    decltype(fallback) v = fallback;
    std::size_t size = sizeof v;
    INFO_DATATYPE t = 0;
    if (api.DSGetBufferInfo(stream_, h, cmd, &t, &v, &size) != GC_ERR_SUCCESS) return fallback;
    return v;
  };
  Delivered d;
  d.handle = h;
  d.base = static_cast<std::byte*>(info(BUFFER_INFO_BASE, static_cast<void*>(nullptr)));
  d.buffer_id = info(BUFFER_INFO_FRAMEID, std::uint64_t{0});
  d.timestamp_ns = static_cast<std::int64_t>(info(BUFFER_INFO_TIMESTAMP_NS, std::uint64_t{0}));
  if (d.timestamp_ns == 0) d.timestamp_ns = now_ns();
  const bool incomplete = info(BUFFER_INFO_IS_INCOMPLETE, bool8_t{0}) != 0;
  const std::size_t width = info(BUFFER_INFO_WIDTH, static_cast<std::size_t>(layout_.width));
  const std::size_t height = info(BUFFER_INFO_HEIGHT, static_cast<std::size_t>(layout_.frame_height) * frames_per_buffer_);
  const std::uint64_t format = info(BUFFER_INFO_PIXELFORMAT, pfnc(config_.pixel_format));
  const auto fh = static_cast<std::size_t>(layout_.frame_height);
  d.frames = frames_per_buffer_;
  d.geometry_ok = width == static_cast<std::size_t>(layout_.width) && height == fh * frames_per_buffer_ && format == pfnc(config_.pixel_format) &&
                  d.base != nullptr;
  std::size_t delivered_rows = height;
  if (incomplete) {
    delivered_rows = info(BUFFER_INFO_DELIVERED_IMAGEHEIGHT, std::size_t{0});
    if (delivered_rows == 0) {
      const std::size_t filled = info(BUFFER_INFO_SIZE_FILLED, std::size_t{0});
      delivered_rows = layout_.width > 0 ? filled / (static_cast<std::size_t>(layout_.width) * bytes_per_pixel(layout_.format)) : 0;
    }
  }
  d.valid = d.geometry_ok ? static_cast<int>(std::min<std::size_t>(delivered_rows / fh, static_cast<std::size_t>(d.frames))) : 0;
  if (chunks_on_ && !incomplete && d.geometry_ok && api.DSGetBufferChunkData && info(BUFFER_INFO_CONTAINS_CHUNKDATA, bool8_t{0})) {
    std::array<SINGLE_CHUNK_DATA, 16> chunks{};
    std::size_t n = chunks.size();
    if (api.DSGetBufferChunkData(stream_, h, chunks.data(), &n) == GC_ERR_SUCCESS)
      for (std::size_t i = 0; i < std::min(n, chunks.size()); ++i)
        if (chunks[i].ChunkID == gentl::kFrameInfoChunkId &&
            chunks[i].ChunkLength >= static_cast<std::size_t>(d.frames) * sizeof(gentl::FrameInfoRecord) && chunks[i].ChunkOffset >= 0 &&
            static_cast<std::size_t>(chunks[i].ChunkOffset) + chunks[i].ChunkLength <= payload_)
          d.records = reinterpret_cast<const gentl::FrameInfoRecord*>(d.base + chunks[i].ChunkOffset);
  }
  return d;
}

std::optional<Delivered> GenTLCameraImpl::wait_buffer(std::chrono::milliseconds timeout) {
  EVENT_NEW_BUFFER_DATA data{};
  std::size_t size = sizeof data;
  const GC_ERROR rc = producer_->api().EventGetData(new_buffer_event_, &data, &size, static_cast<std::uint64_t>(std::max<long>(timeout.count(), 0)));
  if (rc == GC_ERR_TIMEOUT) return std::nullopt;
  if (rc != GC_ERR_SUCCESS) {
    if (!stop_.load()) declare_lost(fmt::format("EventGetData(NEW_BUFFER) failed: {} {}", gentl::error_name(rc), producer_->last_error_text()));
    return std::nullopt;
  }
  last_alive_ns_ = now_ns();
  ++buffers_;
  Delivered d = describe_buffer(data.BufferHandle);
  // The memory must be one we announced.
  if (!owned_.count(d.base) && !producer_owned_.count(d.base)) {
    declare_lost("the producer delivered a buffer at an address that was never queued");
    return std::nullopt;
  }
  return d;
}


}  // namespace stripeline::gentl_detail
