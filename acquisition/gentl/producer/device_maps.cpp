// The node maps of the simulated device: the camera's (remote port) and the
// grabber's (the Device module's port), and the plain information maps of
// the other modules. Each feature's getter and setter run the simulation.
#include <algorithm>
#include <cstring>

#include "acquisition/gentl/frame_info_chunk.h"
#include "acquisition/gentl/producer/sim_producer.h"

namespace stripeline::gentl_sim {

Feature text_feature(std::string name, std::string category, std::function<std::string()> get) {
  Feature f;
  f.name = std::move(name);
  f.kind = Feature::Kind::String;
  f.category = std::move(category);
  f.writable = false;
  f.get_string = std::move(get);
  return f;
}

Feature int_feature(std::string name, std::string category, std::int64_t lo, std::int64_t hi, std::function<std::int64_t()> get,
                    std::function<GC_ERROR(std::int64_t)> set, std::string tip) {
  Feature f;
  f.name = std::move(name);
  f.category = std::move(category);
  f.min = lo;
  f.max = hi;
  f.get_int = std::move(get);
  f.set_int = std::move(set);
  f.writable = static_cast<bool>(f.set_int);
  f.tooltip = std::move(tip);
  return f;
}

namespace {

Feature float_feature(std::string name, std::string category, double lo, double hi, std::string unit, std::function<double()> get,
                      std::function<GC_ERROR(double)> set) {
  Feature f;
  f.name = std::move(name);
  f.kind = Feature::Kind::Float;
  f.category = std::move(category);
  f.fmin = lo;
  f.fmax = hi;
  f.unit = std::move(unit);
  f.get_float = std::move(get);
  f.set_float = std::move(set);
  return f;
}

Feature enum_feature(std::string name, std::string category, std::vector<std::pair<std::string, std::int64_t>> entries,
                     std::function<std::int64_t()> get, std::function<GC_ERROR(std::int64_t)> set) {
  Feature f = int_feature(std::move(name), std::move(category), 0, 0, std::move(get), std::move(set));
  f.kind = Feature::Kind::Enumeration;
  f.entries = std::move(entries);
  return f;
}

Feature command_feature(std::string name, std::string category, std::function<GC_ERROR(std::int64_t)> run) {
  Feature f = int_feature(std::move(name), std::move(category), 0, 1, [] { return std::int64_t{0}; }, std::move(run));
  f.kind = Feature::Kind::Command;
  return f;
}

// A grabber setter that refuses while the stream runs (buffer layout, scene).
template <class F>
std::function<GC_ERROR(std::int64_t)> while_idle(Device* d, F apply) {
  return [d, apply](std::int64_t v) -> GC_ERROR {
    if (d->streaming()) return fail(GC_ERR_BUSY, "cannot change this while the stream is acquiring");
    return apply(v);
  };
}

// A camera setter locked while the stream runs or TLParamsLocked is 1 (the
// features that shape the payload; their XML names pIsLocked TLParamsLocked).
template <class F>
std::function<GC_ERROR(std::int64_t)> while_unlocked(Device* d, F apply) {
  return [d, apply](std::int64_t v) -> GC_ERROR {
    if (d->params_locked()) return fail(GC_ERR_BUSY, "locked (TLParamsLocked): the stream is acquiring or the consumer locked the parameters");
    return apply(v);
  };
}

Feature locked_by_tl(Feature f) {
  f.p_is_locked = "TLParamsLocked";
  return f;
}

// Wakes the acquisition thread after a camera command (start, stop, trigger).
void wake_stream(Device* d) {
  if (d->stream) d->stream->wake();
}

}  // namespace

void build_camera_map(Device* d) {
  auto m = std::make_unique<NodeMap>(kVendor, "StripelineSimCamera", "stripeline_sim_camera.zip");
  Settings& s = d->settings;
  const std::string info = "DeviceControl", fmt = "ImageFormatControl", acq = "AcquisitionControl", chunk = "ChunkDataControl";
  m->add(text_feature("DeviceVendorName", info, [] { return std::string(kVendor); }));
  m->add(text_feature("DeviceModelName", info, [] { return std::string("Simulated laser line camera"); }));
  m->add(text_feature("DeviceSerialNumber", info, [d] { return d->serial(); }));
  m->add(text_feature("DeviceVersion", info, [] { return std::string(STRIPELINE_VERSION); }));
  m->add(int_feature("SensorWidth", fmt, 0, 0, [] { return std::int64_t{kSensorWidth}; }, nullptr));
  m->add(int_feature("SensorHeight", fmt, 0, 0, [] { return std::int64_t{kSensorHeight}; }, nullptr));
  m->add(int_feature("WidthMax", fmt, 0, 0, [&s] { return std::int64_t{kSensorWidth - s.offset_x}; }, nullptr));
  m->add(int_feature("HeightMax", fmt, 0, 0, [&s] { return std::int64_t{std::min(kSensorHeight - s.offset_y, 4096)}; }, nullptr));
  m->add(int_feature("OffsetXMax", fmt, 0, 0, [&s] { return std::int64_t{kSensorWidth - s.width}; }, nullptr));
  m->add(int_feature("OffsetYMax", fmt, 0, 0, [&s] { return std::int64_t{kSensorHeight - s.height}; }, nullptr));
  auto bounded = [&](const char* name, int* field, int lo, std::function<int()> hi) {
    Feature f = int_feature(name, fmt, lo, 0, [field] { return std::int64_t{*field}; },
                            while_unlocked(d, [field, lo, hi, name = std::string(name)](std::int64_t v) -> GC_ERROR {
                              if (v < lo || v > hi()) return fail(GC_ERR_INVALID_VALUE, name + " = " + std::to_string(v) + " is out of range");
                              *field = static_cast<int>(v);
                              return GC_ERROR{GC_ERR_SUCCESS};
                            }));
    f.p_max = std::string(name) + "Max";
    m->add(locked_by_tl(std::move(f)));
  };
  bounded("Width", &s.width, 16, [&s] { return kSensorWidth - s.offset_x; });
  bounded("Height", &s.height, 1, [&s] { return std::min(kSensorHeight - s.offset_y, 4096); });
  bounded("OffsetX", &s.offset_x, 0, [&s] { return kSensorWidth - s.width; });
  bounded("OffsetY", &s.offset_y, 0, [&s] { return kSensorHeight - s.height; });
  m->add(locked_by_tl(enum_feature("PixelFormat", fmt, {{"Mono8", kMono8}, {"Mono16", kMono16}}, [&s] { return s.pixel_format; },
                      while_unlocked(d, [&s](std::int64_t v) {
                        s.pixel_format = v;
                        return GC_ERROR{GC_ERR_SUCCESS};
                      }))));
  m->add(int_feature("PayloadSize", fmt, 0, 0,
                     [&s] { return std::int64_t{s.width} * s.height * (s.pixel_format == kMono8 ? 1 : 2); }, nullptr,
                     "Bytes of one camera frame (the grabber's buffer size is the data stream's payload size)"));
  m->add(float_feature("ExposureTime", acq, 10, 1e6, "us", [&s] { return s.exposure_us; }, [&s](double v) {
    s.exposure_us = v;
    return GC_ERROR{GC_ERR_SUCCESS};
  }));
  m->add(float_feature("Gain", acq, 0, 24, "dB", [&s] { return s.gain_db; }, [&s](double v) {
    s.gain_db = v;
    return GC_ERROR{GC_ERR_SUCCESS};
  }));
  m->add(float_feature("AcquisitionFrameRate", acq, 1, 1e6, "Hz", [&s] { return s.frame_rate; }, [d, &s](double v) {
    s.frame_rate = v;
    d->frame_rate.store(v);
    return GC_ERROR{GC_ERR_SUCCESS};
  }));
  m->add(enum_feature("AcquisitionMode", acq, {{"Continuous", 0}}, [] { return std::int64_t{0}; }, [](std::int64_t) { return GC_ERROR{GC_ERR_SUCCESS}; }));
  m->add(command_feature("AcquisitionStart", acq, [d](std::int64_t) {
    d->acquiring.store(true);
    wake_stream(d);
    return GC_ERROR{GC_ERR_SUCCESS};
  }));
  // Stop: no frame is exposed after it (the buffer being filled goes back to the input pool).
  m->add(command_feature("AcquisitionStop", acq, [d](std::int64_t) {
    d->acquiring.store(false);
    wake_stream(d);
    return GC_ERROR{GC_ERR_SUCCESS};
  }));
  Feature locked = int_feature("TLParamsLocked", acq, 0, 1, [d] { return std::int64_t{d->params_locked()}; }, [&s](std::int64_t v) {
    s.params_locked = v != 0;
    return GC_ERROR{GC_ERR_SUCCESS};
  }, "1 while the transport layer's parameters (geometry, format, chunks) cannot change: set by the consumer, and while acquiring");
  m->add(std::move(locked));
  m->add(enum_feature("TriggerSelector", acq, {{"FrameStart", 0}}, [] { return std::int64_t{0}; }, [](std::int64_t) { return GC_ERROR{GC_ERR_SUCCESS}; }));
  m->add(locked_by_tl(enum_feature("TriggerMode", acq, {{"Off", 0}, {"On", 1}}, [&s] { return s.trigger_mode; }, while_unlocked(d, [&s](std::int64_t v) {
                        s.trigger_mode = v;
                        return GC_ERROR{GC_ERR_SUCCESS};
                      }))));
  m->add(locked_by_tl(enum_feature("TriggerSource", acq, {{"Software", 0}, {"Line1", 2}}, [&s] { return s.trigger_source; },
                      while_unlocked(d, [&s](std::int64_t v) {
                        s.trigger_source = v;
                        return GC_ERROR{GC_ERR_SUCCESS};
                      }))));
  m->add(enum_feature("TriggerActivation", acq, {{"RisingEdge", 0}, {"FallingEdge", 1}}, [&s] { return s.trigger_activation; },
                      [&s](std::int64_t v) {
                        s.trigger_activation = v;
                        return GC_ERROR{GC_ERR_SUCCESS};
                      }));
  m->add(command_feature("TriggerSoftware", acq, [d](std::int64_t) {
    d->trigger_credits.fetch_add(1);
    wake_stream(d);
    return GC_ERROR{GC_ERR_SUCCESS};
  }));
  Feature mode = int_feature("ChunkModeActive", chunk, 0, 1, [&s] { return std::int64_t{s.chunk_mode}; }, while_unlocked(d, [&s](std::int64_t v) {
                               s.chunk_mode = v != 0;
                               return GC_ERROR{GC_ERR_SUCCESS};
                             }));
  mode.kind = Feature::Kind::Boolean;
  mode.tooltip = "Each buffer carries the per-frame information chunk (id 0x53544C46): id, timestamp, encoder, status of every frame";
  m->add(locked_by_tl(std::move(mode)));
  // The first frame's values, read from the chunk (GenICam chunk port).
  for (auto [name, offset] : {std::pair{"ChunkFrameID", 0}, {"ChunkTimestamp", 8}, {"ChunkEncoderValue", 16}}) {
    Feature f = int_feature(name, chunk, 0, 0, nullptr, nullptr);
    f.writable = false;
    f.chunk_id = gentl::kFrameInfoChunkId;
    f.chunk_offset = static_cast<std::uint64_t>(offset);
    m->add(std::move(f));
  }
  m->finish();
  d->remote->map = std::move(m);
}

void build_grabber_map(Device* d) {
  auto m = std::make_unique<NodeMap>(kVendor, "StripelineSimGrabber", "stripeline_sim_grabber.xml");
  Settings& s = d->settings;
  const std::string info = "DeviceInformation", buf = "BufferControl", sim = "Simulation";
  m->add(text_feature("DeviceID", info, [d] { return d->id; }));
  m->add(text_feature("DeviceVendorName", info, [] { return std::string(kVendor); }));
  m->add(text_feature("DeviceModelName", info, [] { return std::string("Simulated frame grabber"); }));
  m->add(int_feature("FramesPerBuffer", buf, 1, 65536, [&s] { return s.frames_per_buffer; }, while_idle(d, [&s](std::int64_t v) {
                       if (v < 1 || v > 65536) return fail(GC_ERR_INVALID_VALUE, "FramesPerBuffer out of range");
                       s.frames_per_buffer = v;
                       return GC_ERROR{GC_ERR_SUCCESS};
                     }),
                     "Frames concatenated vertically into one buffer (one buffer = frames x Height lines)"));
  auto setting = [&](const char* name, std::int64_t* field, std::int64_t lo, std::int64_t hi, const char* tip) {
    m->add(int_feature(name, sim, lo, hi, [field] { return *field; }, while_idle(d, [field, lo, hi](std::int64_t v) {
                         if (v < lo || v > hi) return fail(GC_ERR_INVALID_VALUE, "out of range");
                         *field = v;
                         return GC_ERROR{GC_ERR_SUCCESS};
                       }),
                       tip));
  };
  setting("SimSceneSeed", &s.scene_seed, 0, (std::int64_t{1} << 40), "Seed of the synthetic scene");
  setting("SimEncoderStep", &s.encoder_step, -1000000, 1000000, "Encoder counts per frame (0 = no encoder)");
  setting("SimCachedFrames", &s.cached_frames, 0, 100000, "0: render every frame; N: render frames 0..N-1 once, frame n shows n mod N");
  auto flag = [&](const char* name, bool* field, const char* tip) {
    Feature f = int_feature(name, sim, 0, 1, [field] { return std::int64_t{*field}; }, while_idle(d, [field](std::int64_t v) {
                              *field = v != 0;
                              return GC_ERROR{GC_ERR_SUCCESS};
                            }),
                            tip);
    f.kind = Feature::Kind::Boolean;
    m->add(std::move(f));
  };
  flag("SimWaitForBuffers", &s.wait_for_buffers, "1: wait for a queued buffer instead of losing frames (an underrun), to measure a consumer");
  flag("SimAllocOnly", &s.alloc_only,
       "1: refuse the consumer's memory (DSAnnounceBuffer: GC_ERR_NOT_IMPLEMENTED), buffers only from DSAllocAndAnnounceBuffer, as grabbers "
       "whose DMA needs their own memory do");
  flag("SimWritePixels", &s.write_pixels,
       "0: leave the pixels of each buffer as they are (a grabber's DMA costs the host nothing: this measures a consumer alone)");
  auto live = [&](const char* name, std::atomic<std::int64_t>* field, const char* tip) {
    m->add(int_feature(name, sim, 0, 1000000, [field] { return field->load(); }, [field](std::int64_t v) {
      if (v < 0 || v > 1000000) return fail(GC_ERR_INVALID_VALUE, "out of range");
      field->store(v);
      return GC_ERROR{GC_ERR_SUCCESS};
    }, tip));
  };
  live("SimDropBufferEvery", &d->drop_every, "Every Nth buffer is lost (its id skipped, an EVENT_ERROR fired); 0 = never");
  live("SimIncompleteBufferEvery", &d->incomplete_every, "Every Nth buffer arrives incomplete (its first half of frames only); 0 = never");
  live("SimFailFrameEvery", &d->fail_every, "Every Nth frame is flagged corrupt in the frame information chunk; 0 = never");
  live("SimUnplugAfterBuffers", &d->unplug_after,
       "After this many buffers the device goes away: the stream stops and waits for a buffer fail (GC_ERR_IO) until the device is "
       "opened again; 0 = never");
  m->finish();
  d->map = std::move(m);
}

void build_plain_map(Module* mod, const std::string& model, std::vector<Feature> features) {
  auto m = std::make_unique<NodeMap>(kVendor, model, model + ".xml");
  for (auto& f : features) m->add(std::move(f));
  m->finish();
  mod->map = std::move(m);
}

}  // namespace stripeline::gentl_sim
