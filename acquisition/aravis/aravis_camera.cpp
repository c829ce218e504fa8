// CameraSource over Aravis: open, configure and read back, stream into the
// pipeline's batch buffers, count what is lost, notice when the camera goes.
// docs/cameras.md describes the behaviour; this file is the how.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <system_error>
#include <thread>

#include "acquisition/aravis/aravis_handles.h"
#include "acquisition/aravis/arv_features.h"
#include "acquisition/batch_assembler.h"
#include "acquisition/camera_source.h"
#include "acquisition/genicam_configurator.h"
#include "acquisition/gvcp_probe.h"

namespace stripeline {

namespace {

using aravis::DupStrings;
using aravis::GErrorSlot;
using aravis::GObjectRef;
using clock = std::chrono::steady_clock;

std::string str(const char* s) { return s ? s : ""; }

// Aravis keeps one process-wide device list; guard our use of it.
std::mutex& device_list_mutex() {
  static std::mutex m;
  return m;
}

std::vector<CameraInfo> discover() {
  std::lock_guard lock(device_list_mutex());
  arv_update_device_list();
  std::vector<CameraInfo> found;
  const unsigned n = arv_get_n_devices();
  for (unsigned i = 0; i < n; ++i)
    found.push_back({str(arv_get_device_id(i)), str(arv_get_device_vendor(i)), str(arv_get_device_model(i)),
                     str(arv_get_device_serial_nbr(i)), str(arv_get_device_address(i)), str(arv_get_device_protocol(i))});
  return found;
}

// The Aravis id to open for camera.id: an exact id, a serial number, an
// address or a physical id of a discovered camera; an IP address is also
// tried directly (a camera on another subnet answers no broadcast).
std::string resolve_id(const std::string& wanted, const std::vector<CameraInfo>& found) {
  if (wanted.empty()) {
    if (found.empty()) throw DeviceUnavailable("no camera found (camera.id is empty: the first camera found is used)");
    return found.front().id;
  }
  for (const auto& c : found)
    if (c.id == wanted || c.serial == wanted || c.address == wanted) return c.id;
  GInetAddress* ip = g_inet_address_new_from_string(wanted.c_str());
  if (ip) {
    g_object_unref(ip);
    return wanted;
  }
  std::string names;
  for (const auto& c : found) names += (names.empty() ? "" : ", ") + c.id;
  throw DeviceUnavailable(fmt::format("camera '{}' not found (found: {})", wanted, names.empty() ? "none" : names));
}

ArvPixelFormat arv_format(const std::string& name) {
  if (name == "Mono8") return ARV_PIXEL_FORMAT_MONO_8;
  if (name == "Mono10") return ARV_PIXEL_FORMAT_MONO_10;
  if (name == "Mono12") return ARV_PIXEL_FORMAT_MONO_12;
  if (name == "Mono14") return ARV_PIXEL_FORMAT_MONO_14;
  return ARV_PIXEL_FORMAT_MONO_16;
}

FrameStatus frame_status(ArvBufferStatus s) {
  switch (s) {
    case ARV_BUFFER_STATUS_SUCCESS: return FrameStatus::Complete;
    case ARV_BUFFER_STATUS_MISSING_PACKETS: return FrameStatus::MissingPackets;
    case ARV_BUFFER_STATUS_TIMEOUT: return FrameStatus::Timeout;
    default: return FrameStatus::Failed;
  }
}

class AravisCamera final : public CameraSource {
 public:
  AravisCamera(const CameraConfig& config, int batch_frames);
  ~AravisCamera() override;

  BatchLayout frame_layout() const override { return layout_; }
  bool fill(Batch& batch) override;
  std::string describe() const override { return "camera " + settings_.describe(); }
  SourceEnd end_reason() const override { return end_; }
  void request_stop() noexcept override { stop_.store(true); }
  std::optional<AcquisitionCounters> acquisition_counters() const override;
  // Buffers the driver filled and we have not popped yet, and the one held
  // over from the last batch (the live path's backlog; a frame each). The
  // driver's ring (stream_buffers) bounds it: beyond, the camera's frames
  // find no buffer and are counted as underruns and gaps (missing rows).
  std::optional<std::uint64_t> pending_frames() const override {
    gint in = 0, out = 0;
    arv_stream_get_n_buffers(stream_.get(), &in, &out);
    return static_cast<std::uint64_t>(std::max(out, 0)) + (held_ ? 1u : 0u);
  }
  std::optional<std::uint64_t> total_frames() const override {
    return config_.frames ? std::optional<std::uint64_t>(config_.frames) : std::nullopt;
  }
  const CameraSettings& settings() const override { return settings_; }
  double loss_detection_seconds() const override { return loss_seconds_.load(); }
  std::string loss_reason() const override {
    std::lock_guard lock(loss_mu_);
    return loss_reason_;
  }

 private:
  void open(const std::string& id);
  void configure();
  void configure_transport();
  void read_back();
  void start_stream();
  void monitor_loop();
  void stop_threads();
  void declare_lost(const std::string& why);
  ArrivedFrame to_frame(ArvBuffer* b);
  static void on_control_lost(ArvDevice*, gpointer self);

  CameraConfig config_;
  int batch_frames_;
  GObjectRef<ArvCamera> camera_;
  GObjectRef<ArvStream> stream_;
  GObjectRef<ArvChunkParser> chunks_;
  ArvDevice* device_ = nullptr;  // owned by camera_
  aravis::DeviceFeatures features_;  // device_'s node map, for the configurator
  gulong lost_handler_ = 0;
  CameraSettings settings_;
  BatchLayout layout_;
  std::size_t payload_ = 0;
  bool acquiring_ = false;

  BatchAssembler assembler_;
  aravis::BufferLease held_;  // popped, did not fit the last batch: goes first into the next (before stream_ is destroyed)
  std::uint64_t rows_delivered_ = 0;
  std::uint64_t batches_full_ = 0, batches_flushed_ = 0;
  SourceEnd end_ = SourceEnd::Exhausted;
  std::atomic<bool> stop_{false}, lost_{false};
  std::atomic<std::int64_t> last_alive_ns_{0};  // steady clock: last frame or answered probe
  std::atomic<double> loss_seconds_{0.0};
  mutable std::mutex loss_mu_;
  std::string loss_reason_;
  mutable std::mutex counters_mu_;
  AcquisitionCounters published_;  // what acquisition_counters() returns (updated once per fill)

  // The liveness monitor and the software trigger run beside fill().
  std::mutex thread_mu_;
  std::condition_variable thread_cv_;
  bool threads_stop_ = false;
  std::thread monitor_;
  std::mutex feature_mu_;  // the monitor and the trigger thread both use the device's features
  SoftwareTrigger trigger_;
};

std::int64_t now_ns() { return std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now().time_since_epoch()).count(); }

AravisCamera::AravisCamera(const CameraConfig& config, int batch_frames)
    : config_(config),
      batch_frames_(batch_frames),
      assembler_(BatchLayout{}, 0) {
  config_.validate();
  // An IP address is opened directly (no discovery round, ~1 s saved on
  // every reconnection); anything else is looked up among the cameras found.
  GInetAddress* ip = config_.id.empty() ? nullptr : g_inet_address_new_from_string(config_.id.c_str());
  if (ip) {
    g_object_unref(ip);
    open(config_.id);
  } else {
    open(resolve_id(config_.id, discover()));
  }
  configure();
  read_back();
  layout_ = BatchLayout{settings_.width, settings_.height, 0, config_.storage_format()};
  assembler_ = BatchAssembler(layout_, config_.gap_fill_limit ? config_.gap_fill_limit : static_cast<std::uint64_t>(batch_frames_));
  start_stream();
  spdlog::info("camera: {}", settings_.describe());
}

void AravisCamera::open(const std::string& id) {
  GErrorSlot err;
  {
    std::lock_guard lock(device_list_mutex());
    camera_.reset(arv_camera_new(id.c_str(), err.out()));
  }
  if (err || !camera_) throw DeviceUnavailable(fmt::format("camera '{}': cannot open it: {}", id, err.message()));
  device_ = arv_camera_get_device(camera_.get());
  features_.reset(device_);
  // Aravis opens a GigE Vision camera even when another host controls it
  // (the first write then fails): say so now, as a camera we cannot have yet.
  if (ARV_IS_GV_DEVICE(device_) && !arv_gv_device_is_controller(ARV_GV_DEVICE(device_)))
    throw DeviceUnavailable(fmt::format("camera '{}' is controlled by another application (it will be retried)", id));
  settings_.id = id;
  settings_.vendor = str(arv_camera_get_vendor_name(camera_.get(), err.out()));
  settings_.model = str(arv_camera_get_model_name(camera_.get(), err.out()));
  settings_.serial = str(arv_camera_get_device_serial_number(camera_.get(), err.out()));
  if (arv_camera_is_gv_device(camera_.get())) {
    settings_.protocol = "GigEVision";
    GSocketAddress* a = arv_gv_device_get_device_address(ARV_GV_DEVICE(device_));
    if (a) {
      gchar* s = g_inet_address_to_string(g_inet_socket_address_get_address(G_INET_SOCKET_ADDRESS(a)));
      settings_.address = s ? s : "";
      g_free(s);
    }
  } else {
    settings_.protocol = arv_camera_is_uv_device(camera_.get()) ? "USB3Vision" : "other";
  }
}

void AravisCamera::on_control_lost(ArvDevice*, gpointer self) {
  static_cast<AravisCamera*>(self)->declare_lost("the camera reports that we lost control of it (it restarted, or another host took it)");
}

void AravisCamera::declare_lost(const std::string& why) {
  if (lost_.exchange(true)) return;
  const double since = (now_ns() - last_alive_ns_.load()) / 1e9;
  loss_seconds_.store(since);
  {
    std::lock_guard lock(loss_mu_);
    loss_reason_ = why;
  }
  spdlog::error("camera {}: lost after {:.2f} s without a frame or an answer: {}", settings_.id, since, why);
}

// The standard sequence is the configurator's (genicam_configurator.h); what
// only Aravis' transports need comes after it: the encoder chunk (parsed by
// Aravis' chunk parser), GigE Vision packets and heartbeat.
void AravisCamera::configure() {
  configure_camera(features_, config_, [&] { configure_transport(); });
}

void AravisCamera::configure_transport() {
  ArvCamera* cam = camera_.get();
  GErrorSlot err;
  if (!config_.encoder_chunk.empty()) {
    if (!arv_camera_are_chunks_available(cam, nullptr))
      throw ConfigError(fmt::format("camera.encoder_chunk: this camera sends no chunk data (no ChunkModeActive), so '{}' cannot be read",
                                    config_.encoder_chunk));
    const std::string chunk = config_.encoder_chunk.rfind("Chunk", 0) == 0 ? config_.encoder_chunk.substr(5) : config_.encoder_chunk;
    arv_camera_set_chunks(cam, chunk.c_str(), err.out());
    if (err) throw ConfigError(fmt::format("camera.encoder_chunk: the camera refused chunk {}: {}", chunk, err.message()));
    chunks_.reset(arv_camera_create_chunk_parser(cam));
  }

  if (arv_camera_is_gv_device(cam)) {
    if (config_.packet_size > 0) {
      arv_camera_gv_set_packet_size_adjustment(cam, ARV_GV_PACKET_SIZE_ADJUSTMENT_NEVER);
      arv_camera_gv_set_packet_size(cam, config_.packet_size, err.out());
      if (err) throw ConfigError(fmt::format("camera.packet_size: the camera refused {} bytes: {}", config_.packet_size, err.message()));
    }
    // The camera drops a controller silent for this long. Aravis 0.8
    // heartbeats every second and retries a read for up to 2.5 s, so never
    // less than 3 s, whatever heartbeat_timeout says (our detection of a
    // silent camera uses heartbeat_timeout on its own).
    if (arv_camera_is_feature_available(cam, "GevHeartbeatTimeout", nullptr))
      arv_camera_set_integer(cam, "GevHeartbeatTimeout", static_cast<gint64>(std::max(config_.heartbeat_timeout, 3.0) * 1000), nullptr);
  }
}

void AravisCamera::read_back() {
  ArvCamera* cam = camera_.get();
  GErrorSlot err;
  read_back_camera(features_, config_, settings_);
  const int w = settings_.width, h = settings_.height;
  if (arv_camera_is_gv_device(cam)) settings_.packet_size = static_cast<int>(arv_camera_gv_get_packet_size(cam, nullptr));
  payload_ = arv_camera_get_payload(cam, err.out());
  const std::size_t frame_bytes = static_cast<std::size_t>(w) * h * bytes_per_pixel(config_.storage_format());
  if (err || payload_ < frame_bytes)
    throw DeviceUnavailable(fmt::format("camera {}: payload {} bytes is less than one {}x{} frame ({} bytes){}", settings_.id, payload_, w,
                                        h, frame_bytes, err ? ": " + err.message() : std::string()));
}

void AravisCamera::start_stream() {
  ArvCamera* cam = camera_.get();
  GErrorSlot err;
  if (arv_camera_is_gv_device(cam) && !config_.packet_socket)
    arv_camera_gv_set_stream_options(cam, ARV_GV_STREAM_OPTION_PACKET_SOCKET_DISABLED);
  stream_.reset(arv_camera_create_stream(cam, nullptr, nullptr, err.out()));
  if (err || !stream_) throw DeviceUnavailable(fmt::format("camera {}: cannot create its stream: {}", settings_.id, err.message()));
  if (ARV_IS_GV_STREAM(stream_.get()) && config_.frame_timeout > 0)
    g_object_set(stream_.get(), "frame-retention", static_cast<guint>(config_.frame_timeout * 1e6), nullptr);
  // A larger receive buffer rides out the moments the stream thread is not
  // scheduled (a frame is ~75 packets arriving back to back).
  if (ARV_IS_GV_STREAM(stream_.get()) && config_.socket_buffer > 0)
    g_object_set(stream_.get(), "socket-buffer", ARV_GV_STREAM_SOCKET_BUFFER_FIXED, "socket-buffer-size", config_.socket_buffer, nullptr);
  for (int i = 0; i < config_.stream_buffers; ++i) arv_stream_push_buffer(stream_.get(), arv_buffer_new_allocate(payload_));
  last_alive_ns_.store(now_ns());
  arv_camera_start_acquisition(cam, err.out());
  if (err) throw DeviceUnavailable(fmt::format("camera {}: cannot start acquisition: {}", settings_.id, err.message()));
  acquiring_ = true;
  // Aravis' heartbeat thread notices when another controller took over or the
  // camera restarted (it lost our control privilege). Connected last: nothing
  // after it throws, so the handler never outlives us.
  try {
    monitor_ = std::thread([this] { monitor_loop(); });
    if (config_.trigger == TriggerMode::Software) trigger_.start(features_, config_.frame_rate, lost_, feature_mu_);
  } catch (const std::system_error& e) {
    stop_threads();
    arv_camera_stop_acquisition(cam, nullptr);
    throw RuntimeFailure(fmt::format("camera {}: cannot start its threads: {}", settings_.id, e.what()));
  }
  lost_handler_ = g_signal_connect(device_, "control-lost", G_CALLBACK(&AravisCamera::on_control_lost), this);
}

// A camera that sends nothing may be waiting for triggers, or gone. After a
// sixth of the heartbeat timeout without a frame, ask it something: a GigE
// Vision camera gets a register read with short waits of our own (three tries
// of a twelfth each), so that a dead camera is declared lost within the
// heartbeat timeout; other cameras get a feature read through Aravis.
void AravisCamera::monitor_loop() {
  const double period_s = config_.heartbeat_timeout / 6.0;
  const auto period = std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(period_s));
  // Bounded so that closing the camera never waits long for a probe in flight.
  const auto wait = std::chrono::milliseconds(std::clamp<long>(static_cast<long>(config_.heartbeat_timeout * 1000 / 12), 20, 500));
  std::unique_lock lock(thread_mu_);
  while (!threads_stop_) {
    thread_cv_.wait_for(lock, period);
    if (threads_stop_ || lost_.load()) continue;
    if ((now_ns() - last_alive_ns_.load()) / 1e9 < period_s) continue;
    lock.unlock();
    bool alive = false;
    std::string why;
    if (settings_.protocol == "GigEVision" && !settings_.address.empty()) {
      const auto ccp = gvcp_read_register(settings_.address, kGvcpControlChannelPrivilege, wait, 3);
      // Bits 0 and 1: exclusive or control access. None means it restarted
      // (or dropped us): it answers, but it will not stream to us any more.
      alive = ccp && (*ccp & 3u) != 0;
      why = ccp ? fmt::format("{} answers but has no controller any more (it restarted)", settings_.address)
                : fmt::format("no answer from {} to 3 register reads of {} ms", settings_.address, wait.count());
    } else {
      GErrorSlot err;
      std::lock_guard features(feature_mu_);  // Aravis' feature tree is not thread-safe
      const gint64 payload = arv_device_get_integer_feature_value(device_, "PayloadSize", err.out());
      alive = !err && payload > 0;
      why = err ? err.message() : "PayloadSize read as 0";
    }
    lock.lock();
    if (threads_stop_) break;
    if (alive)
      last_alive_ns_.store(now_ns());
    else
      declare_lost(why);
  }
}

// Closing a camera that is gone takes Aravis several seconds (~4 s for the
// stream, ~5 s for the device: each control write retries before giving up).
// The daemon does it on a thread of its own (daemon.cpp, reap_camera).
void AravisCamera::stop_threads() {
  {
    std::lock_guard lock(thread_mu_);
    threads_stop_ = true;
  }
  thread_cv_.notify_all();
  if (monitor_.joinable()) monitor_.join();
  trigger_.stop();
}

AravisCamera::~AravisCamera() {
  stop_threads();
  held_.reset();
  // A camera silent for longer than a probe period is probably gone (a
  // SIGTERM can come before the monitor declares it): do not spend Aravis'
  // retries telling it to stop.
  const double silent = (now_ns() - last_alive_ns_.load()) / 1e9;
  if (acquiring_ && !lost_.load() && silent < config_.heartbeat_timeout / 6.0) {
    GErrorSlot err;
    arv_camera_stop_acquisition(camera_.get(), err.out());
    if (err) spdlog::debug("camera {}: stop acquisition: {}", settings_.id, err.message());
  }
  if (lost_handler_ && device_) g_signal_handler_disconnect(device_, lost_handler_);
  stream_.reset();  // joins Aravis' stream thread, frees its buffers
  chunks_.reset();
  camera_.reset();
}

ArrivedFrame AravisCamera::to_frame(ArvBuffer* b) {
  ArrivedFrame f;
  f.frame_id = arv_buffer_get_frame_id(b);
  const guint64 ts = arv_buffer_get_timestamp(b);
  f.timestamp_ns = static_cast<std::int64_t>(ts ? ts : arv_buffer_get_system_timestamp(b));
  f.status = frame_status(arv_buffer_get_status(b));
  if (f.status == FrameStatus::Complete) {
    if (arv_buffer_get_payload_type(b) != ARV_BUFFER_PAYLOAD_TYPE_IMAGE &&
        arv_buffer_get_payload_type(b) != ARV_BUFFER_PAYLOAD_TYPE_EXTENDED_CHUNK_DATA) {
      f.status = FrameStatus::Failed;
      return f;
    }
    f.width = arv_buffer_get_image_width(b);
    f.height = arv_buffer_get_image_height(b);
    const ArvPixelFormat pf = arv_buffer_get_image_pixel_format(b);
    f.format = pf == ARV_PIXEL_FORMAT_MONO_8 ? PixelFormat::Mono8 : PixelFormat::Mono16;
    if (pf != arv_format(config_.pixel_format)) f.status = FrameStatus::Failed;
    size_t size = 0;
    f.data = static_cast<const std::byte*>(arv_buffer_get_image_data(b, &size));
    f.bytes = size;
    if (chunks_ && arv_buffer_has_chunks(b)) {
      GErrorSlot err;
      const gint64 v = arv_chunk_parser_get_integer_value(chunks_.get(), b, config_.encoder_chunk.c_str(), err.out());
      if (!err) f.encoder = v;
    }
  }
  return f;
}

bool AravisCamera::fill(Batch& batch) {
  batch.frames = 0;
  // With camera.frames, the batch ends at the last frame wanted, gap rows included.
  int capacity = batch.layout.frames;
  if (config_.frames) {
    if (rows_delivered_ >= config_.frames) {
      end_ = SourceEnd::Exhausted;
      return false;
    }
    capacity = static_cast<int>(std::min<std::uint64_t>(static_cast<std::uint64_t>(capacity), config_.frames - rows_delivered_));
  }
  std::optional<clock::time_point> flush_at;
  const auto poll = std::chrono::milliseconds(20);
  bool full = false, flushed = false;

  auto publish_counters = [&] {
    guint64 completed = 0, failures = 0, underruns = 0;
    arv_stream_get_statistics(stream_.get(), &completed, &failures, &underruns);
    std::lock_guard lock(counters_mu_);
    published_ = assembler_.counters();
    published_.underruns = underruns;
    published_.batches_full = batches_full_;
    published_.batches_flushed = batches_flushed_;
    published_.path = AcquisitionPath::Copy;  // Aravis' buffers are its own: every frame is copied into the batch
    published_.bytes_copied = published_.frames_complete * layout_.frame_pixels() * bytes_per_pixel(layout_.format);
  };

  while (true) {
    // A frame held over from the last batch was received: it goes in first,
    // even when stopping or lost, so that it is not dropped uncounted.
    if (!held_ && stop_.load()) {
      end_ = SourceEnd::Stopped;
      break;
    }
    if (!held_ && lost_.load()) {
      end_ = SourceEnd::DeviceLost;
      break;
    }
    aravis::BufferLease b = std::move(held_);
    if (!b) {
      auto wait = std::chrono::duration_cast<std::chrono::microseconds>(poll);
      if (flush_at) {
        const auto left = std::chrono::duration_cast<std::chrono::microseconds>(*flush_at - clock::now());
        if (left.count() <= 0) {
          flushed = true;
          break;
        }
        wait = std::min(wait, left);
      }
      b = aravis::BufferLease(
          stream_.get(), arv_stream_timeout_pop_buffer(stream_.get(), static_cast<guint64>(std::max<std::int64_t>(wait.count(), 1))));
      if (!b) continue;
      last_alive_ns_.store(now_ns());
      // A failed buffer without a frame id cannot be placed; the id gap the
      // next frame shows counts it. (The lease gives it back.)
      if (arv_buffer_get_status(b.get()) != ARV_BUFFER_STATUS_SUCCESS && arv_buffer_get_frame_id(b.get()) == 0) continue;
    }
    const ArrivedFrame f = to_frame(b.get());
    if (assembler_.add(batch, f, capacity) == BatchAssembler::Result::BatchFull) {
      held_ = std::move(b);  // it goes first into the next batch
      full = true;
      break;
    }
    b.reset();  // back to the driver now: the assembler copied the frame
    // (A frame dropped as late adds no row: the flush clock starts at the first row.)
    if (!flush_at && batch.frames > 0 && config_.flush_timeout > 0)
      flush_at = clock::now() + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(config_.flush_timeout));
    if (batch.frames >= capacity) {
      full = true;
      break;
    }
  }
  if (full) ++batches_full_;
  if (flushed) ++batches_flushed_;
  rows_delivered_ += static_cast<std::uint64_t>(batch.frames);
  publish_counters();
  return batch.frames > 0;
}

std::optional<AcquisitionCounters> AravisCamera::acquisition_counters() const {
  std::lock_guard lock(counters_mu_);
  return published_;
}

}  // namespace

bool camera_support_built() { return true; }

std::vector<CameraInfo> list_cameras() { return discover(); }

std::unique_ptr<CameraSource> open_camera(const CameraConfig& config, int batch_frames) {
  return std::make_unique<AravisCamera>(config, batch_frames);
}

}  // namespace stripeline
