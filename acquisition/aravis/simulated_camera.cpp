#include "acquisition/simulated_camera.h"

#include <fmt/format.h>

#include <atomic>
#include <cstring>
#include <mutex>
#include <optional>
#include <vector>

#include "acquisition/aravis/aravis_handles.h"
#include "core/errors.h"

namespace stripeline {

struct SimulatedCamera::Impl {
  SimulatedCameraConfig config;
  aravis::GObjectRef<ArvGvFakeCamera> camera;
  ArvFakeCamera* fake = nullptr;  // owned by camera
  std::mutex mu;                            // the renderer follows the ROI; the fake camera's thread calls us
  std::optional<SyntheticScanner> scanner;
  std::vector<std::vector<std::byte>> cache;  // cached_frames rendered frames of the current geometry
  std::atomic<std::uint64_t> rendered{0};

  // Called by Aravis' fake camera for every frame it sends.
  static void fill(ArvBuffer* buffer, void* self_ptr, guint32, guint32, ArvPixelFormat pixel_format) {
    auto* self = static_cast<Impl*>(self_ptr);
    // The fake camera allocates its buffer at its payload size; Aravis' data
    // accessor reports the received size, which only its own ramp sets.
    const size_t size = arv_fake_camera_get_payload(self->fake);
    auto* dst = static_cast<std::byte*>(const_cast<void*>(arv_buffer_get_data(buffer, nullptr)));
    const int w = arv_buffer_get_image_width(buffer), h = arv_buffer_get_image_height(buffer);
    const bool mono16 = pixel_format == ARV_PIXEL_FORMAT_MONO_16;
    if (!dst || w < 1 || h < 1 || (pixel_format != ARV_PIXEL_FORMAT_MONO_8 && !mono16)) return;
    const PixelFormat format = mono16 ? PixelFormat::Mono16 : PixelFormat::Mono8;
    const std::size_t bytes = static_cast<std::size_t>(w) * h * bytes_per_pixel(format);
    if (size < bytes) return;
    std::lock_guard lock(self->mu);
    const auto& c = self->scanner ? self->scanner->config() : self->config.scene;
    if (!self->scanner || c.width != w || c.frame_height != h || c.format != format) {
      SyntheticConfig scene = self->config.scene;
      scene.width = w;
      scene.frame_height = h;
      scene.format = format;
      scene.frames = 0;
      self->scanner.emplace(scene);
      self->cache.assign(static_cast<std::size_t>(self->config.cached_frames), {});
    }
    const std::uint64_t id = arv_buffer_get_frame_id(buffer);
    if (self->cache.empty()) {
      self->scanner->render(id, dst);
    } else {
      const std::size_t n = static_cast<std::size_t>(id % self->cache.size());
      auto& frame = self->cache[n];
      if (frame.size() != bytes) {
        frame.resize(bytes);
        self->scanner->render(n, frame.data());
      }
      std::memcpy(dst, frame.data(), bytes);
    }
    self->rendered.fetch_add(1);
  }
};

SimulatedCamera::SimulatedCamera(SimulatedCameraConfig config) : impl_(std::make_unique<Impl>()) {
  if (!(config.lost_packet_ratio >= 0 && config.lost_packet_ratio <= 1))
    throw ConfigError(fmt::format("lost packet ratio {} is out of range (expected 0..1)", config.lost_packet_ratio));
  config.scene.validate();
  if (config.cached_frames < 0 || config.cached_frames > 100000)
    throw ConfigError(fmt::format("cached frames {} is out of range (expected 0..100000)", config.cached_frames));
  impl_->config = config;
  impl_->camera.reset(arv_gv_fake_camera_new_full(config.interface.c_str(), config.serial.c_str(), nullptr));
  if (!impl_->camera || !arv_gv_fake_camera_is_running(impl_->camera.get()))
    throw RuntimeFailure(fmt::format("simulated camera: cannot serve on interface '{}' (is it up? is port 3956 free?)", config.interface));
  g_object_set(impl_->camera.get(), "gvsp-lost-ratio", config.lost_packet_ratio, nullptr);
  impl_->fake = arv_gv_fake_camera_get_fake_camera(impl_->camera.get());
  arv_fake_camera_set_fill_pattern(impl_->fake, &Impl::fill, impl_.get());
}

SimulatedCamera::~SimulatedCamera() {
  if (impl_->camera) arv_fake_camera_set_fill_pattern(arv_gv_fake_camera_get_fake_camera(impl_->camera.get()), nullptr, nullptr);
  impl_->camera.reset();  // stops its threads
}

std::string SimulatedCamera::id() const { return "Aravis-Fake-" + impl_->config.serial; }

std::uint64_t SimulatedCamera::frames_rendered() const { return impl_->rendered.load(); }

}  // namespace stripeline
