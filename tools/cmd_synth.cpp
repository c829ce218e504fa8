// `stripeline synth OUT.tiff`: render a recording of the simulated scanner
// (frames concatenated vertically, as a grabber saves them) and, optionally,
// its truth as CSV (frame,column,row; row empty where the stripe is occluded).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <vector>

#include "acquisition/synthetic_scanner.h"
#include "core/errors.h"
#include "io/atomic_file.h"
#include "io/recording.h"
#include "tools/commands.h"
#include "acquisition/triangulation_scenes.h"
#include "tools/synth_triangulation.h"

namespace stripeline::tools {

namespace {

void write_truth(const std::filesystem::path& path, const SyntheticScanner& scanner) {
  io::AtomicFile f(path);
  const auto& c = scanner.config();
  std::string text = "frame,column,row\n";
  char line[64];
  for (std::uint64_t fr = 0; fr < c.frames; ++fr) {
    for (int x = 0; x < c.width; ++x) {
      const double t = scanner.truth(fr, x);
      const int n = std::isnan(t) ? std::snprintf(line, sizeof line, "%llu,%d,\n", static_cast<unsigned long long>(fr), x)
                                  : std::snprintf(line, sizeof line, "%llu,%d,%.4f\n", static_cast<unsigned long long>(fr), x, t);
      text.append(line, static_cast<std::size_t>(n));
    }
    if (text.size() > (1u << 20)) {
      f.write(text.data(), text.size());
      text.clear();
    }
  }
  f.write(text.data(), text.size());
  f.commit();
}

}  // namespace

Subcommand add_synth(CLI::App& app) {
  auto* sub = app.add_subcommand("synth", "Write a synthetic recording (and its truth) from the simulated laser scanner");
  sub->footer(
      "Recordings are written for fast replay: a TIFF holds one strip per frame (--frames-per-strip), which replay decodes\n"
      "in parallel, compressed with Deflate and the horizontal predictor (--compression deflate, the default) or not\n"
      "(--compression none: the fastest to replay, read straight into the batches). The frame height is recorded in the\n"
      "TIFF ImageDescription (PNG: tEXt Description): its metadata document, kind recording (docs/data-model.md).\n"
      "PNG is one compressed stream (decoded by one thread); PGM is uncompressed.");
  struct Flags {
    std::string out, truth;
    SyntheticConfig c;
    int depth = 8;
    bool no_bits_tags = false;
    std::string compression = "deflate";
    int frames_per_strip = 1;
    TriangulationSynthOptions tri;
  };
  auto f = std::make_shared<Flags>();
  f->c.frames = 300;
  sub->add_option("output", f->out, "Recording to write (.tiff, .png or .pgm)")->required();
  sub->add_option("--width", f->c.width, "Frame width")->capture_default_str();
  sub->add_option("--frame-height", f->c.frame_height, "Frame height")->capture_default_str();
  sub->add_option("--frames", f->c.frames, "Number of frames")->capture_default_str();
  sub->add_option("--depth", f->depth, "Bits per pixel: 8 or 16; 10, 12 or 14: a Mono10/12/14 camera's values in 16-bit words, tagged "
                                      "(TIFF MaxSampleValue, PNG sBIT, PGM maxval, the description)")->capture_default_str();
  sub->add_flag("--no-bits-tags", f->no_bits_tags, "With --depth 10/12/14: write no tag saying so (replay then infers the bits from the data)");
  sub->add_option("--compression", f->compression, "TIFF/PNG: deflate (TIFF: with the horizontal predictor) or none")->capture_default_str();
  sub->add_option("--frames-per-strip", f->frames_per_strip, "TIFF: frames per strip, each strip decoded by one thread on replay")
      ->capture_default_str();
  sub->add_option("--seed", f->c.seed, "Random seed")->capture_default_str();
  sub->add_option("--beam-sigma", f->c.beam_sigma, "Stripe Gaussian sigma, pixels")->capture_default_str();
  sub->add_option("--peak", f->c.peak, "Mean stripe peak above background (8-bit scale)")->capture_default_str();
  sub->add_option("--background", f->c.background, "Background level")->capture_default_str();
  sub->add_option("--noise", f->c.noise, "Sensor noise sigma")->capture_default_str();
  sub->add_option("--occlusion", f->c.occlusion, "Fraction of occluded columns")->capture_default_str();
  sub->add_option("--reflection", f->c.reflection, "Fraction of columns with a secondary reflection")->capture_default_str();
  sub->add_option("--truth", f->truth, "Also write the true stripe centres as CSV here (--scene: the scene's truth as JSON)");
  sub->add_option("--scene", f->tri.scene,
                  std::string("Sheet-of-light sensor instead (docs/calibration.md, docs/measure.md): target (with --target), ") + parts_preset_names() +
                      "; 2048x1088 sensor; without --frames, the scene's own count");
  sub->add_option("--target", f->tri.target, "--scene target: the target file (configs/targets/)");
  sub->add_option("--roi", f->tri.roi, "--scene: X,Y,W,H window of the sensor (default 0,428,2048,256)");
  sub->add_option("--out-of-view", f->tri.out_of_view, "--scene target: fraction of frames partly out of view");
  sub->add_option("--corrupted", f->tri.corrupted, "--scene target: fraction of corrupted frames");
  return {sub, [f, sub] {
            if (!f->tri.scene.empty()) {
              f->tri.out = f->out;
              f->tri.truth = f->truth;
              if (sub->count("--frames") && f->c.frames == 0) throw InputError("--frames 0: a recording needs at least one frame");
              f->tri.frames = sub->count("--frames") ? f->c.frames : 0;  // 0: the scene's own
              f->tri.seed = f->c.seed;
              return synth_triangulation(f->tri);
            }
            if (f->depth != 8 && f->depth != 10 && f->depth != 12 && f->depth != 14 && f->depth != 16)
              throw InputError("--depth " + std::to_string(f->depth) + " is not supported (expected 8, 10, 12, 14 or 16)");
            if (f->c.frames == 0) throw InputError("--frames 0: a recording needs at least one frame");
            if (f->compression != "deflate" && f->compression != "none")
              throw InputError("--compression " + f->compression + " is not supported (expected deflate or none)");
            if (f->frames_per_strip < 1)
              throw InputError("--frames-per-strip " + std::to_string(f->frames_per_strip) + " is out of range (expected at least 1)");
            f->c.format = f->depth == 8 ? PixelFormat::Mono8 : PixelFormat::Mono16;
            f->c.bits = f->depth == 8 || f->depth == 16 ? 0 : f->depth;
            f->c.validate();
            const std::uint64_t rows = f->c.frames * static_cast<std::uint64_t>(f->c.frame_height);
            const std::uint64_t bytes = rows * static_cast<std::uint64_t>(f->c.width) * bytes_per_pixel(f->c.format);
            if (bytes > (8ull << 30))
              throw InputError("--frames " + std::to_string(f->c.frames) + ": the recording would take " + std::to_string(bytes >> 20) +
                               " MiB (expected at most 8 GiB)");
            SyntheticScanner scanner(f->c);
            BatchLayout layout = scanner.frame_layout();
            layout.frames = static_cast<int>(std::min<std::uint64_t>(f->c.frames, std::uint64_t{300}));
            std::vector<std::byte> image(bytes);
            // Render batch by batch straight into the image.
            Batch batch(layout, &allocate_host);
            std::size_t offset = 0;
            while (scanner.fill(batch)) {
              std::memcpy(image.data() + offset, batch.pixels.data(), batch.filled_bytes());
              offset += batch.filled_bytes();
            }
            io::RecordingWriteOptions ro;
            ro.compress = f->compression == "deflate";
            ro.frames_per_strip = f->frames_per_strip;
            ro.significant_bits = f->c.bits;
            ro.bits_tags = !f->no_bits_tags;
            io::write_recording(f->out, image.data(), f->c.width, f->c.frame_height, f->c.frames, f->c.format, ro);
            if (!f->truth.empty()) write_truth(f->truth, scanner);
            const std::string bits = f->c.bits == 0 ? "" : ", " + std::to_string(f->c.bits) + " significant bits" + (f->no_bits_tags ? " (untagged)" : "");
            std::printf("wrote %s: %llu frames of %dx%d %s%s (%d x %llu)\n", f->out.c_str(), static_cast<unsigned long long>(f->c.frames),
                        f->c.width, f->c.frame_height, to_string(f->c.format), bits.c_str(), f->c.width, static_cast<unsigned long long>(rows));
            if (!f->truth.empty()) std::printf("wrote %s\n", f->truth.c_str());
            return 0;
          }};
}

}  // namespace stripeline::tools
