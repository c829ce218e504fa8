// `stripeline bench-replay`: replay from files of each kind as a fraction of
// the engine's steady state (prefilled batches, no file), measured in the same
// run, and decode throughput alone against the number of threads. See bench/README.md.
#include <fcntl.h>
#include <sys/resource.h>
#include <tiffio.h>
#include <unistd.h>

#include <tbb/global_control.h>
#include <tbb/task_arena.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "acquisition/file_source.h"
#include "app/outputs.h"
#include "app/run_session.h"
#include "acquisition/synthetic_scanner.h"
#include "core/errors.h"
#include "io/atomic_file.h"
#include "io/image_reader.h"
#include "io/inflate.h"
#include "io/recording.h"
#include "pipeline/pipeline.h"
#include "stages/backend.h"
#include "tools/commands.h"

namespace stripeline::tools {

namespace {

namespace fs = std::filesystem;
using clock = std::chrono::steady_clock;

struct ReplayBenchOptions {
  std::string json, dir, backend = "auto", kinds;
  // Kinds also replayed with --ply and --heightmap (TIFF) written, as a
  // fraction of the same replay without outputs ("" = none).
  std::string outputs = "synth-deflate,tiff-none,raw";
  std::uint64_t frames = 1200;
  int width = 2048, frame_height = 52, depth = 8;
  std::uint64_t loops = 5;
  int repeats = 3;
  std::uint64_t engine_batches = 200;  // batches timed for the engine's steady state (after a warm-up)
  std::vector<int> threads = {1, 2, 4, 8, 16};
  bool quick = false, cold = true, keep = false;
};

// One recording on disk.
struct Kind {
  std::string name;        // synth-deflate, libtiff-deflate, png, ...
  std::string file;        // file name in the bench directory
  std::string what;        // one line: how it is laid out
  io::ImageFileFormat format = io::ImageFileFormat::Auto;
  bool tiff = false;
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The frames of the recording, rendered once by the simulated scanner.
std::vector<std::byte> render(const ReplayBenchOptions& o) {
  SyntheticConfig c;
  c.width = o.width;
  c.frame_height = o.frame_height;
  c.frames = o.frames;
  c.format = o.depth == 16 ? PixelFormat::Mono16 : PixelFormat::Mono8;
  SyntheticScanner scanner(c);
  BatchLayout layout = scanner.frame_layout();
  layout.frames = static_cast<int>(std::min<std::uint64_t>(o.frames, 300));
  Batch batch(layout, &allocate_host);
  std::vector<std::byte> image;
  image.reserve(layout.frame_pixels() * bytes_per_pixel(layout.format) * o.frames);
  while (scanner.fill(batch)) image.insert(image.end(), batch.pixels.data(), batch.pixels.data() + batch.filled_bytes());
  return image;
}

// A Deflate TIFF as other programs write it, without a predictor:
// rows_per_strip 0 is libtiff's default (TIFFDefaultStripSize: strips of
// about 8 KiB); tifffile's default (2023) is strips of 64 KiB with the
// description {"shape": [rows, width]}.
void write_other_deflate(const fs::path& path, const std::vector<std::byte>& image, int width, std::int64_t height, int depth,
                         std::uint32_t rows_per_strip, const std::string& description) {
  const fs::path temp = path.string() + ".tmp";
  TIFF* t = TIFFOpen(temp.c_str(), "w");
  if (t == nullptr) throw RuntimeFailure(temp.string() + ": libtiff cannot open it for writing");
  TIFFSetField(t, TIFFTAG_IMAGEWIDTH, static_cast<std::uint32_t>(width));
  TIFFSetField(t, TIFFTAG_IMAGELENGTH, static_cast<std::uint32_t>(height));
  TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, static_cast<std::uint16_t>(depth));
  TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, static_cast<std::uint16_t>(1));
  TIFFSetField(t, TIFFTAG_PHOTOMETRIC, static_cast<std::uint16_t>(PHOTOMETRIC_MINISBLACK));
  TIFFSetField(t, TIFFTAG_PLANARCONFIG, static_cast<std::uint16_t>(PLANARCONFIG_CONTIG));
  TIFFSetField(t, TIFFTAG_COMPRESSION, static_cast<std::uint16_t>(COMPRESSION_ADOBE_DEFLATE));
  TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, rows_per_strip > 0 ? rows_per_strip : TIFFDefaultStripSize(t, 0));
  if (!description.empty()) TIFFSetField(t, TIFFTAG_IMAGEDESCRIPTION, description.c_str());
  const std::size_t row_bytes = static_cast<std::size_t>(width) * static_cast<std::size_t>(depth / 8);
  std::vector<std::byte> row(row_bytes);
  bool ok = true;
  for (std::int64_t y = 0; y < height && ok; ++y) {
    std::memcpy(row.data(), image.data() + static_cast<std::size_t>(y) * row_bytes, row_bytes);
    ok = TIFFWriteScanline(t, row.data(), static_cast<std::uint32_t>(y), 0) == 1;
  }
  TIFFClose(t);
  if (!ok) throw RuntimeFailure(temp.string() + ": writing failed");
  fs::rename(temp, path);
}

void write_raw(const fs::path& path, const std::vector<std::byte>& image) {
  io::AtomicFile f(path);
  f.write(image.data(), image.size());
  f.commit();
}

std::vector<Kind> write_recordings(const fs::path& dir, const ReplayBenchOptions& o, const std::vector<std::byte>& image) {
  const PixelFormat format = o.depth == 16 ? PixelFormat::Mono16 : PixelFormat::Mono8;
  const std::int64_t height = static_cast<std::int64_t>(o.frames) * o.frame_height;
  std::vector<Kind> all = {
      {"synth-deflate", "synth-deflate.tif", "stripeline synth: Deflate + predictor, a strip per frame", io::ImageFileFormat::Tiff, true},
      {"tifffile-deflate", "tifffile-deflate.tif", "as tifffile writes Deflate: 64 KiB strips, no predictor", io::ImageFileFormat::Tiff, true},
      {"libtiff-deflate", "libtiff-deflate.tif", "libtiff defaults: Deflate, ~8 KiB strips, no predictor", io::ImageFileFormat::Tiff, true},
      {"png", "rec.png", "PNG, zlib level 6 (one stream)", io::ImageFileFormat::Png, false},
      {"tiff-none", "synth-none.tif", "stripeline synth --compression none: a strip per frame", io::ImageFileFormat::Tiff, true},
      {"pgm", "rec.pgm", "PGM (P5), uncompressed", io::ImageFileFormat::Pgm, false},
      {"raw", "rec.raw", "raw, headerless", io::ImageFileFormat::Raw, false},
  };
  std::vector<Kind> kinds;
  for (const Kind& k : all) {
    if (!o.kinds.empty() && ("," + o.kinds + ",").find("," + k.name + ",") == std::string::npos) continue;
    const fs::path p = dir / k.file;
    if (k.name == "synth-deflate" || k.name == "png") {
      io::write_recording(p, image.data(), o.width, o.frame_height, o.frames, format, io::RecordingWriteOptions{true, 1});
    } else if (k.name == "tiff-none") {
      io::write_recording(p, image.data(), o.width, o.frame_height, o.frames, format, io::RecordingWriteOptions{false, 1});
    } else if (k.name == "libtiff-deflate") {
      write_other_deflate(p, image, o.width, height, o.depth, 0, "");
    } else if (k.name == "tifffile-deflate") {
      const std::size_t row_bytes = static_cast<std::size_t>(o.width) * static_cast<std::size_t>(o.depth / 8);
      write_other_deflate(p, image, o.width, height, o.depth, static_cast<std::uint32_t>(std::max<std::size_t>(1, 65536 / row_bytes)),
                          nlohmann::json{{"shape", {height, o.width}}}.dump());
    } else if (k.name == "pgm") {
      io::write_recording(p, image.data(), o.width, o.frame_height, o.frames, format);
    } else {
      write_raw(p, image);
    }
    kinds.push_back(k);
  }
  return kinds;
}

// Drops the file's pages from the page cache (clean pages only: the writers
// fsync). Returns false where the kernel refused.
bool drop_from_page_cache(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::fdatasync(fd) == 0 && ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0;
  ::close(fd);
  return ok;
}

// The engine without a file (the steady-state reference below): pool slots filled once from the rendered frames
// (as a grabber's DMA would), then only their metadata stamped.
class PrefilledSource final : public FrameSource {
 public:
  PrefilledSource(const std::vector<std::byte>& image, BatchLayout frame, std::uint64_t frames_per_pass, std::uint64_t total)
      : image_(image), frame_(frame), per_pass_(frames_per_pass), total_(total) {}
  BatchLayout frame_layout() const override { return frame_; }
  bool fill(Batch& b) override {
    if (next_ >= total_) return false;
    const int k = static_cast<int>(std::min<std::uint64_t>(static_cast<std::uint64_t>(b.layout.frames), total_ - next_));
    if (std::find(rendered_.begin(), rendered_.end(), b.pixels.data()) == rendered_.end()) {
      const std::size_t fb = frame_.frame_pixels() * bytes_per_pixel(frame_.format);
      for (int i = 0; i < b.layout.frames; ++i)
        std::memcpy(b.frame_data(i), image_.data() + ((next_ + static_cast<std::uint64_t>(i)) % per_pass_) * fb, fb);
      rendered_.push_back(b.pixels.data());
    }
    b.frames = k;
    for (int i = 0; i < k; ++i) b.meta[i] = FrameMeta{next_ + static_cast<std::uint64_t>(i), 0, 0, false, false};
    next_ += static_cast<std::uint64_t>(k);
    return true;
  }
  std::optional<std::uint64_t> total_frames() const override { return total_; }
  std::string describe() const override { return "prefilled frames (no file)"; }

 private:
  const std::vector<std::byte>& image_;
  BatchLayout frame_;
  std::uint64_t per_pass_, total_, next_ = 0;
  std::vector<std::byte*> rendered_;
};

// CPU time of the whole process (every thread), user + system.
double process_cpu_seconds() {
  struct rusage u {};
  ::getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

struct Rate {
  double profiles_per_s = 0, mb_per_s = 0, seconds = 0;
  // CPU seconds the run used, and the rate it implies on this machine with
  // every hardware thread busy with nothing else: profiles / CPU seconds x
  // threads. On a shared machine, wall-clock rates follow the neighbours'
  // load; this one follows the work done (bench/README.md).
  double cpu_seconds = 0, cpu_bound_profiles_per_s = 0;
};

Rate run_pipeline(FrameSource& source, Backend backend, const std::vector<ProfileSink*>& sinks = {}) {
  PipelineOptions po;
  po.backend = backend;
  const double cpu0 = process_cpu_seconds();
  const PipelineStats s = run_engine(po, source, sinks);
  const double cpu = process_cpu_seconds() - cpu0;
  const double hw = std::max(1u, std::thread::hardware_concurrency());
  return Rate{s.profiles_per_s(), s.mb_per_s(), s.seconds, cpu, cpu > 0 ? static_cast<double>(s.profiles) / cpu * hw : 0.0};
}

// Medians: the wall-clock fields of the run with the median wall rate, the
// CPU fields of the run with the median CPU-bound rate.
Rate median_rate(std::vector<Rate> runs) {
  std::sort(runs.begin(), runs.end(), [](const Rate& a, const Rate& b) { return a.profiles_per_s < b.profiles_per_s; });
  Rate m = runs[runs.size() / 2];
  std::sort(runs.begin(), runs.end(), [](const Rate& a, const Rate& b) { return a.cpu_bound_profiles_per_s < b.cpu_bound_profiles_per_s; });
  m.cpu_seconds = runs[runs.size() / 2].cpu_seconds;
  m.cpu_bound_profiles_per_s = runs[runs.size() / 2].cpu_bound_profiles_per_s;
  return m;
}

nlohmann::json rate_json(const Rate& r) {
  return {{"profiles_per_s", r.profiles_per_s},
          {"mb_per_s", r.mb_per_s},
          {"seconds", r.seconds},
          {"cpu_seconds", r.cpu_seconds},
          {"cpu_bound_profiles_per_s", r.cpu_bound_profiles_per_s}};
}

FileSourceConfig file_config(const fs::path& path, const Kind& k, const ReplayBenchOptions& o, std::uint64_t loops) {
  FileSourceConfig fc;
  fc.path = path;
  fc.frame_height = o.frame_height;
  fc.format = k.format;
  fc.loops = loops;
  if (k.format == io::ImageFileFormat::Raw) fc.raw = io::RawGeometry{o.width, 0, o.depth == 16 ? PixelFormat::Mono16 : PixelFormat::Mono8};
  return fc;
}

// Decoding alone: every row of the file, a batch (300 frames) per read, into
// one buffer, `loops` passes, on an arena of `threads` threads.
struct DecodeRate {
  double mb_per_s = 0;      // wall clock
  double mb_per_cpu_s = 0;  // per CPU second of the process: the cost of decoding, whatever the machine's load
};

DecodeRate decode_rate(const fs::path& path, const Kind& k, const ReplayBenchOptions& o, int threads, bool native, int passes) {
  const std::optional<io::RawGeometry> raw =
      k.format == io::ImageFileFormat::Raw ? std::optional<io::RawGeometry>(io::RawGeometry{o.width, 0, o.depth == 16 ? PixelFormat::Mono16 : PixelFormat::Mono8})
                                           : std::nullopt;
  io::ImageReadOptions ro;
  ro.native_tiff_codecs = native;
  tbb::task_arena arena(threads);
  std::vector<double> mbps, mb_per_cpu;
  arena.execute([&] {
    auto reader = io::open_image(path, k.format, raw, ro);
    const io::ImageInfo info = reader->info();
    const std::size_t rb = static_cast<std::size_t>(info.width) * bytes_per_pixel(info.format);
    const std::int64_t chunk = static_cast<std::int64_t>(o.frame_height) * 300;
    HostBuffer buffer = allocate_host(rb * static_cast<std::size_t>(chunk));
    for (int pass = 0; pass <= passes; ++pass) {  // pass 0: warm-up
      reader->rewind();
      const auto t0 = clock::now();
      const double cpu0 = process_cpu_seconds();
      while (reader->rows_left() > 0) reader->read_rows(buffer.data(), std::min(chunk, reader->rows_left()));
      const double s = std::chrono::duration<double>(clock::now() - t0).count();
      const double cpu = process_cpu_seconds() - cpu0;
      const double mb = static_cast<double>(rb) * static_cast<double>(info.height) / 1e6;
      if (pass > 0) {
        mbps.push_back(mb / s);
        mb_per_cpu.push_back(cpu > 0 ? mb / cpu : 0.0);
      }
    }
  });
  return DecodeRate{median(mbps), median(mb_per_cpu)};
}

std::vector<int> parse_threads(const std::string& text) {
  std::vector<int> out;
  std::stringstream s(text);
  std::string item;
  while (std::getline(s, item, ',')) {
    int n = 0;
    try {
      n = std::stoi(item);
    } catch (const std::exception&) {
      n = 0;
    }
    if (n < 1 || n > 1024) throw InputError("--threads " + text + ": '" + item + "' is not a thread count (expected e.g. 1,2,4,8,16)");
    out.push_back(n);
  }
  if (out.empty()) throw InputError("--threads is empty (expected e.g. 1,2,4,8,16)");
  return out;
}

// The engine's steady state, the reference every "x engine" ratio divides
// by: the same frames prefilled (no file in the way), `warmup` batches to
// settle (pool, scratch, CUDA context, clocks), then `batches` batches timed
// at the sink. The rate is one batch's profiles over the median time between
// consecutive batches, as `stripeline bench` reports a steady state; a short
// run's rate, start-up included, flatters every ratio taken against it.
class SteadyStateSink final : public ProfileSink {
 public:
  SteadyStateSink(std::uint64_t warmup, std::uint64_t frame_bytes) : warmup_(warmup), frame_bytes_(frame_bytes) {}
  void begin(const ScanInfo&) override {}
  void consume(const ProfileSpan& p) override {
    const auto now = clock::now();
    if (++batches_ == warmup_) {
      last_ = now;
      cpu0_ = process_cpu_seconds();
      return;
    }
    if (batches_ < warmup_) return;
    periods_.push_back(std::chrono::duration<double>(now - last_).count());
    last_ = now;
    frames_per_batch_.push_back(static_cast<double>(p.frames));
    timed_frames_ += static_cast<std::uint64_t>(p.frames);
    cpu1_ = process_cpu_seconds();
  }
  void finish() override {}
  Rate rate() const {
    Rate r;
    const double period = median(periods_), frames = median(frames_per_batch_);
    if (period <= 0) return r;
    double timed = 0;
    for (double t : periods_) timed += t;
    const double hw = std::max(1u, std::thread::hardware_concurrency());
    r.profiles_per_s = frames / period;
    r.mb_per_s = r.profiles_per_s * static_cast<double>(frame_bytes_) / 1e6;
    r.seconds = timed;
    r.cpu_seconds = cpu1_ - cpu0_;
    r.cpu_bound_profiles_per_s = r.cpu_seconds > 0 ? static_cast<double>(timed_frames_) / r.cpu_seconds * hw : 0.0;
    return r;
  }

 private:
  std::uint64_t warmup_, frame_bytes_, batches_ = 0, timed_frames_ = 0;
  std::vector<double> periods_, frames_per_batch_;
  clock::time_point last_;
  double cpu0_ = 0, cpu1_ = 0;
};

Rate steady_engine(const std::vector<std::byte>& image, BatchLayout frame, const ReplayBenchOptions& o, Backend backend) {
  PipelineOptions po;
  po.backend = backend;
  po.batch_frames = kDefaultBatchFrames;  // the production batch, measured as such (not derived from the budget)
  const std::uint64_t warmup = static_cast<std::uint64_t>(po.buffers) * 2, batches = o.quick ? 20 : o.engine_batches;
  PrefilledSource src(image, frame, o.frames, (warmup + batches) * static_cast<std::uint64_t>(po.batch_frames));
  SteadyStateSink sink(warmup, frame.frame_pixels() * bytes_per_pixel(frame.format));
  std::vector<ProfileSink*> sinks = {&sink};
  run_engine(po, src, sinks);
  return sink.rate();
}

// Everything measured, by kind (index into the kinds), before it is printed.
struct Measured {
  std::vector<Rate> engine_runs;  // the steady state, once per round
  std::vector<std::vector<Rate>> warm, cold, plain, with_outputs;
  std::vector<std::vector<double>> wall_of_engine, cpu_of_engine, of_plain;
  std::vector<bool> cold_ok;
  std::vector<std::uint64_t> output_bytes;
  std::vector<std::size_t> output_kinds;
  explicit Measured(std::size_t n)
      : warm(n), cold(n), plain(n), with_outputs(n), wall_of_engine(n), cpu_of_engine(n), of_plain(n), cold_ok(n, false), output_bytes(n, 0) {}
};

// Rounds: the engine's steady state (the same frames with no file in the
// way), then every kind, then again. Interleaving keeps a shared machine's
// changing load out of the ratios: each round's ratios are taken, and the
// medians reported.
void measure_replays(const fs::path& dir, const ReplayBenchOptions& o, const std::vector<Kind>& kinds, const std::vector<std::byte>& image,
                     Backend backend, Measured& m) {
  const BatchLayout frame{o.width, o.frame_height, 0, o.depth == 16 ? PixelFormat::Mono16 : PixelFormat::Mono8};
  for (const Kind& k : kinds) {  // warm-up: page cache, thread-local decoders
    FileSource src(file_config(dir / k.file, k, o, 1));
    run_pipeline(src, backend);
  }
  for (int r = 0; r < o.repeats; ++r) {
    m.engine_runs.push_back(steady_engine(image, frame, o, backend));
    for (std::size_t i = 0; i < kinds.size(); ++i) {
      FileSource src(file_config(dir / kinds[i].file, kinds[i], o, o.loops));
      m.warm[i].push_back(run_pipeline(src, backend));
      m.wall_of_engine[i].push_back(m.warm[i].back().profiles_per_s / m.engine_runs.back().profiles_per_s);
      m.cpu_of_engine[i].push_back(m.warm[i].back().cpu_bound_profiles_per_s / m.engine_runs.back().cpu_bound_profiles_per_s);
    }
  }
  if (!o.cold) return;
  for (int r = 0; r < o.repeats; ++r) {
    for (std::size_t i = 0; i < kinds.size(); ++i) {
      m.cold_ok[i] = drop_from_page_cache(dir / kinds[i].file);
      FileSource src(file_config(dir / kinds[i].file, kinds[i], o, 1));
      m.cold[i].push_back(run_pipeline(src, backend));
    }
  }
}

// The same replays writing a PLY and a height map (as `replay --ply
// out.ply --heightmap out.tif` does: app/outputs.cpp, the writers on
// threads of their own), interleaved with the plain ones again.
void measure_outputs(const fs::path& dir, const ReplayBenchOptions& o, const std::vector<Kind>& kinds, Backend backend, Measured& m) {
  for (std::size_t i = 0; i < kinds.size(); ++i)
    if (("," + o.outputs + ",").find("," + kinds[i].name + ",") != std::string::npos) m.output_kinds.push_back(i);
  for (int r = 0; r < o.repeats && !m.output_kinds.empty(); ++r) {
    for (const std::size_t i : m.output_kinds) {
      FileSource plain(file_config(dir / kinds[i].file, kinds[i], o, o.loops));
      m.plain[i].push_back(run_pipeline(plain, backend));
      Config outputs;  // the files as `replay --ply ... --heightmap ...` writes them
      outputs.output.dir = dir;
      outputs.output.ply = "outputs-" + kinds[i].name + ".ply";
      outputs.output.heightmap = "outputs-" + kinds[i].name + ".tif";
      outputs.output.preview = "";
      outputs.output.summary = "";
      RunSession session(std::move(outputs));
      const OutputSinks& sinks = session.open_outputs();
      FileSource src(file_config(dir / kinds[i].file, kinds[i], o, o.loops));
      m.with_outputs[i].push_back(run_pipeline(src, backend, sinks.all()));
      m.of_plain[i].push_back(m.with_outputs[i].back().profiles_per_s / m.plain[i].back().profiles_per_s);
      m.output_bytes[i] = 0;
      for (const auto& f : sinks.files) {
        m.output_bytes[i] += fs::file_size(f);
        fs::remove(f);
      }
    }
  }
}

void report_replays(const fs::path& dir, const ReplayBenchOptions& o, const std::vector<Kind>& kinds, Backend backend, const Measured& m,
                    const Rate& engine, nlohmann::json& root) {
  std::printf("\n== replay, no outputs (%s backend): source -> pipeline, %llu loops; x engine: median of the rounds' ratios to the steady state\n",
              to_string(backend), static_cast<unsigned long long>(o.loops));
  std::printf("%-18s %8s %11s %9s %8s %11s %8s %11s %8s  %s\n", "kind", "file MB", "profiles/s", "MB/s", "x engine", "cpu-bound", "x engine",
              "cold prof/s", "x engine", "layout");
  nlohmann::json replay = nlohmann::json::object();
  for (std::size_t i = 0; i < kinds.size(); ++i) {
    const Kind& k = kinds[i];
    const Rate warm = median_rate(m.warm[i]);
    const Rate cold = o.cold ? median_rate(m.cold[i]) : Rate{};
    const double file_mb = static_cast<double>(fs::file_size(dir / k.file)) / 1e6;
    const double wall_x = median(m.wall_of_engine[i]), cpu_x = median(m.cpu_of_engine[i]);
    std::printf("%-18s %8.1f %11.0f %9.1f %8.3f %11.0f %8.3f %11.0f %8.3f  %s\n", k.name.c_str(), file_mb, warm.profiles_per_s, warm.mb_per_s,
                wall_x, warm.cpu_bound_profiles_per_s, cpu_x, cold.profiles_per_s, cold.profiles_per_s / engine.profiles_per_s, k.what.c_str());
    nlohmann::json j = {{"file", k.file},
                        {"layout", k.what},
                        {"file_mb", file_mb},
                        {"warm", rate_json(warm)},
                        {"warm_fraction_of_engine", wall_x},
                        {"warm_cpu_bound_fraction_of_engine", cpu_x}};
    if (o.cold) {
      j["cold"] = rate_json(cold);
      j["cold_fraction_of_engine"] = cold.profiles_per_s / engine.profiles_per_s;
      j["cold_page_cache_dropped"] = static_cast<bool>(m.cold_ok[i]);
    }
    replay[k.name] = j;
  }
  root["replay"] = replay;
}

void report_outputs(const std::vector<Kind>& kinds, const Measured& m, const Rate& engine, nlohmann::json& root) {
  if (m.output_kinds.empty()) return;
  std::printf("\n== replay with outputs (PLY + 16-bit TIFF height map, written on their own threads) vs the same replay without; median of the rounds' ratios\n");
  std::printf("%-18s %11s %11s %8s %9s %10s\n", "kind", "plain /s", "outputs /s", "ratio", "x engine", "output MB");
  nlohmann::json outputs = nlohmann::json::object();
  for (const std::size_t i : m.output_kinds) {
    const Rate plain = median_rate(m.plain[i]), with = median_rate(m.with_outputs[i]);
    const double ratio = median(m.of_plain[i]);
    std::printf("%-18s %11.0f %11.0f %8.3f %9.3f %10.1f\n", kinds[i].name.c_str(), plain.profiles_per_s, with.profiles_per_s, ratio,
                with.profiles_per_s / engine.profiles_per_s, static_cast<double>(m.output_bytes[i]) / 1e6);
    outputs[kinds[i].name] = {{"plain", rate_json(plain)},
                              {"with_outputs", rate_json(with)},
                              {"fraction_of_plain", ratio},
                              {"fraction_of_engine", with.profiles_per_s / engine.profiles_per_s},
                              {"output_mb", static_cast<double>(m.output_bytes[i]) / 1e6}};
  }
  root["replay_with_outputs"] = outputs;
}

void report_over_uncompressed(const ReplayBenchOptions& o, const std::vector<Kind>& kinds, const Measured& m, nlohmann::json& root) {
  const auto none = std::find_if(kinds.begin(), kinds.end(), [](const Kind& k) { return k.name == "tiff-none"; });
  for (std::size_t i = 0; i < kinds.size() && none != kinds.end(); ++i) {
    if (kinds[i].name == "tiff-none") continue;
    const auto n = static_cast<std::size_t>(none - kinds.begin());
    std::vector<double> wall, cpu;
    for (int r = 0; r < o.repeats; ++r) {
      wall.push_back(m.warm[i][r].profiles_per_s / m.warm[n][r].profiles_per_s);
      cpu.push_back(m.warm[i][r].cpu_bound_profiles_per_s / m.warm[n][r].cpu_bound_profiles_per_s);
    }
    std::printf("%s / tiff-none (warm, median of the rounds): %.3f wall clock, %.3f cpu-bound\n", kinds[i].name.c_str(), median(wall),
                median(cpu));
    root["over_uncompressed"][kinds[i].name] = {{"wall", median(wall)}, {"cpu_bound", median(cpu)}};
  }
}

// Decoding alone, by thread count, with stripeline's codecs and libtiff's.
void report_decode(const fs::path& dir, const ReplayBenchOptions& o, const std::vector<Kind>& kinds, int hw, nlohmann::json& root) {
  std::printf("\n== decode alone (MB/s of pixels), a batch of 300 frames per read, by threads\n");
  std::printf("%-28s", "kind");
  for (int t : o.threads) std::printf(" %9d", t);
  std::printf("  %8s  %s\n", "1 -> max", "MB/cpu-s");
  nlohmann::json decode = nlohmann::json::object();
  const int passes = o.quick ? 1 : 3;
  // Allow the thread sweep past the core count (it then shows oversubscription).
  const int max_threads = std::max(hw, *std::max_element(o.threads.begin(), o.threads.end()));
  tbb::global_control allow(tbb::global_control::max_allowed_parallelism, static_cast<std::size_t>(max_threads));
  for (const Kind& k : kinds) {
    for (bool native : {true, false}) {
      if (!native && !k.tiff) continue;
      if (!native && o.quick) continue;
      const std::string label = k.name + (k.tiff ? (native ? " (stripeline)" : " (libtiff codecs)") : "");
      std::printf("%-28s", label.c_str());
      std::fflush(stdout);
      nlohmann::json by_threads = nlohmann::json::object();
      double first = 0, last = 0, per_cpu = 0;
      for (int t : o.threads) {
        const DecodeRate r = decode_rate(dir / k.file, k, o, t, native, passes);
        std::printf(" %9.1f", r.mb_per_s);
        std::fflush(stdout);
        by_threads[std::to_string(t)] = r.mb_per_s;
        if (t == o.threads.front()) first = r.mb_per_s, per_cpu = r.mb_per_cpu_s;
        last = r.mb_per_s;
      }
      std::printf("  %7.2fx  %8.1f\n", first > 0 ? last / first : 0.0, per_cpu);
      decode[k.name + (native ? "" : "/libtiff")] = {{"mb_per_s_by_threads", by_threads}, {"mb_per_cpu_s_1_thread", per_cpu}};
    }
  }
  root["decode_mb_per_s"] = decode;
  if (hw < *std::max_element(o.threads.begin(), o.threads.end()))
    std::printf("(this machine has %d hardware threads: counts above it share them)\n", hw);
}

// The run's header: what was measured where, on stdout and in the JSON.
nlohmann::json run_header(const fs::path& dir, const ReplayBenchOptions& o, Backend backend, int hw) {
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  const std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  const double mb_per_pass = static_cast<double>(o.frames) * o.width * o.frame_height * (o.depth / 8) / 1e6;
  std::printf("stripeline bench-replay %s  %s  host %s, %d CPU threads, %s backend\n", STRIPELINE_VERSION, date, host, hw, to_string(backend));
  std::printf("inflate: %s\n", io::inflate_library());
  std::printf("recording: %llu frames of %dx%d %d-bit (%.1f MB), %llu loops per replay, median of %d; files in %s\n",
              static_cast<unsigned long long>(o.frames), o.width, o.frame_height, o.depth, mb_per_pass,
              static_cast<unsigned long long>(o.loops), o.repeats, dir.c_str());
  nlohmann::json root;
  root["version"] = STRIPELINE_VERSION;
  root["date"] = date;
  root["host"] = host;
  root["cpu_threads"] = hw;
  root["backend"] = to_string(backend);
  root["inflate"] = io::inflate_library();
  root["recording"] = {{"frames", o.frames}, {"width", o.width}, {"frame_height", o.frame_height}, {"depth", o.depth}, {"mb", mb_per_pass}};
  root["loops"] = o.loops;
  root["repeats"] = o.repeats;
  return root;
}

int bench_replay(ReplayBenchOptions o) {
  if (o.quick) {
    o.frames = std::min<std::uint64_t>(o.frames, 300);
    o.loops = std::min<std::uint64_t>(o.loops, 2);
    o.repeats = 1;
  }
  if (o.depth != 8 && o.depth != 16) throw InputError("--depth " + std::to_string(o.depth) + " is not supported (expected 8 or 16)");
  if (o.frames == 0 || o.loops == 0 || o.repeats < 1) throw InputError("--frames, --loops and --repeats must be at least 1");
  if (o.engine_batches < 10) throw InputError("--engine-batches " + std::to_string(o.engine_batches) + " is too few (expected at least 10)");
  const Backend backend = resolve_backend(parse_backend(o.backend));
  const int hw = static_cast<int>(std::thread::hardware_concurrency());

  fs::path dir = o.dir;
  const bool own_dir = dir.empty();
  if (own_dir) dir = fs::temp_directory_path() / ("stripeline-bench-replay-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  struct Cleanup {
    fs::path dir;
    bool remove;
    ~Cleanup() {
      std::error_code ec;
      if (remove) fs::remove_all(dir, ec);
    }
  } cleanup{dir, own_dir && !o.keep};

  nlohmann::json root = run_header(dir, o, backend, hw);
  const std::vector<std::byte> image = render(o);
  const std::vector<Kind> kinds = write_recordings(dir, o, image);
  Measured m(kinds.size());
  measure_replays(dir, o, kinds, image, backend, m);
  measure_outputs(dir, o, kinds, backend, m);
  const Rate engine = median_rate(m.engine_runs);
  std::printf("\n%-18s %12.0f profiles/s %9.1f MB/s  cpu-bound %9.0f profiles/s  (steady state: prefilled batches, no file, %llu batches "
              "after a warm-up, median time between batches; the reference)\n",
              "engine", engine.profiles_per_s, engine.mb_per_s, engine.cpu_bound_profiles_per_s,
              static_cast<unsigned long long>(o.quick ? 20 : o.engine_batches));
  root["engine"] = rate_json(engine);
  root["engine"]["measure"] = "steady state: warm-up batches, then median time between batches at the sink";
  report_replays(dir, o, kinds, backend, m, engine, root);
  report_outputs(kinds, m, engine, root);
  report_over_uncompressed(o, kinds, m, root);
  report_decode(dir, o, kinds, hw, root);
  if (!o.json.empty()) {
    io::write_file_atomically(o.json, root.dump(2) + "\n");
    std::printf("\nwrote %s\n", o.json.c_str());
  }
  return 0;
}

}  // namespace

Subcommand add_bench_replay(CLI::App& app) {
  auto* sub = app.add_subcommand("bench-replay", "Measure replay from files of each kind against the engine, and decode throughput by thread count (bench/README.md)");
  auto o = std::make_shared<ReplayBenchOptions>();
  auto threads = std::make_shared<std::string>("1,2,4,8,16");
  sub->add_option("--json", o->json, "Also write the results as JSON here");
  sub->add_option("--dir", o->dir, "Write the recordings here (kept); default: a temporary directory, removed at the end");
  sub->add_option("--backend", o->backend, "auto, cpu or cuda")->capture_default_str();
  sub->add_option("--frames", o->frames, "Frames in the recording")->capture_default_str();
  sub->add_option("--width", o->width, "Frame width")->capture_default_str();
  sub->add_option("--frame-height", o->frame_height, "Frame height")->capture_default_str();
  sub->add_option("--depth", o->depth, "Bits per pixel: 8 or 16")->capture_default_str();
  sub->add_option("--loops", o->loops, "Passes over the file per timed replay")->capture_default_str();
  sub->add_option("--repeats", o->repeats, "Timed replays per kind (the median is reported)")->capture_default_str();
  sub->add_option("--engine-batches", o->engine_batches, "Batches timed for the engine's steady state (the x engine reference), after a warm-up")
      ->capture_default_str();
  sub->add_option("--threads", *threads, "Thread counts of the decode sweep")->capture_default_str();
  sub->add_option("--kinds", o->kinds, "Only these kinds, comma-separated: synth-deflate, tifffile-deflate, libtiff-deflate, png, tiff-none, pgm, raw");
  sub->add_flag("!--no-cold", o->cold, "Skip the cold page cache runs");
  sub->add_option("--outputs", o->outputs, "Kinds also replayed writing a PLY and a TIFF height map (\"\" = none)")->capture_default_str();
  sub->add_flag("--keep", o->keep, "Keep the temporary directory");
  sub->add_flag("--quick", o->quick, "Few frames and repetitions (a smoke test, not figures to publish)");
  return {sub, [o, threads] {
            o->threads = parse_threads(*threads);
            return bench_replay(*o);
          }};
}

}  // namespace stripeline::tools
