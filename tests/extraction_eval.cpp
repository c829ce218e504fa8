// See extraction_eval.h.
#include "extraction_eval.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <stdexcept>

#include "acquisition/file_source.h"
#include "acquisition/pixel_bits.h"
#include "core/batch.h"
#include "core/profile.h"
#include "io/image_reader.h"
#include "io/recording.h"
#include "test_helpers.h"

namespace stripeline::test {

std::vector<HardCase> hard_cases(int bits, std::uint64_t frames) {
  SyntheticConfig base;
  base.frames = frames;
  base.format = bits == 8 ? PixelFormat::Mono8 : PixelFormat::Mono16;
  base.bits = bits == 8 || bits == 16 ? 0 : bits;  // 10, 12, 14: a Mono10/12/14 camera's values in 16-bit words
  std::vector<HardCase> cases;
  cases.push_back({"default", base});
  {
    SyntheticConfig c = base;  // the harder recording
    c.speckle = 0.3;
    c.beam_sigma_variation = 0.4;
    c.reflection = 0.15;
    c.reflection_strength = 0.5;
    c.occlusion = 0.06;
    cases.push_back({"harder", c});
  }
  {
    SyntheticConfig c = base;  // bright, uneven diffuse light
    c.ambient = 110.0;
    c.peak = 110.0;
    cases.push_back({"ambient", c});
  }
  {
    SyntheticConfig c = base;  // textured, coloured surface under ambient light
    c.ambient = 40.0;
    c.texture = 0.3;
    c.peak = 150.0;
    cases.push_back({"texture", c});
  }
  {
    SyntheticConfig c = base;  // saturated core
    c.peak = 600.0;
    c.peak_variation = 0.3;
    cases.push_back({"saturated", c});
  }
  {
    SyntheticConfig c = base;  // saturated core with an uneven glow (stronger below)
    c.peak = 600.0;
    c.peak_variation = 0.3;
    c.glow = 0.05;
    c.glow_width = 5.0;
    cases.push_back({"saturated+glow", c});
  }
  {
    SyntheticConfig c = base;  // a second, weaker stripe 10 px away; wider beams, so the dip between them stays above 40
    c.beam_sigma = 2.0;
    c.second_stripe = 0.3;
    c.second_stripe_distance = 10.0;
    c.second_stripe_strength = 0.7;
    c.reflection = 0.0;  // a reflection landing on the second stripe would outshine the first
    cases.push_back({"second stripe", c});
  }
  {
    SyntheticConfig c = base;  // dim segments
    c.dim_segments = 0.2;
    c.dim_factor = 0.25;
    cases.push_back({"dim segments", c});
  }
  {
    SyntheticConfig c = base;  // everything at once, milder
    c.speckle = 0.2;
    c.beam_sigma_variation = 0.3;
    c.reflection = 0.1;
    c.occlusion = 0.05;
    c.ambient = 40.0;
    c.texture = 0.2;
    c.peak = 160.0;
    c.glow = 0.03;
    c.second_stripe = 0.15;
    c.dim_segments = 0.1;
    c.dim_factor = 0.3;
    cases.push_back({"all", c});
  }
  return cases;
}

std::vector<HardCase> occlusion_cases(int bits, std::uint64_t frames) {
  SyntheticConfig base = hard_cases(bits, frames).front().config;
  std::vector<HardCase> cases;
  // The scanner's occlusion cells are 512 columns at width 2048: a fraction
  // n / 512 gives runs of exactly n columns, one per cell.
  for (int n : {8, 16, 24, 40}) {
    SyntheticConfig c = base;
    c.occlusion = n / 512.0;
    cases.push_back({"occluded runs of " + std::to_string(n), c});
  }
  SyntheticConfig c = hard_cases(bits, frames)[1].config;  // harder: speckle, reflections, beam width
  c.occlusion = 24 / 512.0;
  cases.push_back({"harder, runs of 24", c});
  return cases;
}

HardCase saturated_glow_case(int bits, std::uint64_t frames) {
  SyntheticConfig c = hard_cases(bits, frames).front().config;
  c.peak = 600.0;
  c.peak_variation = 0.3;
  c.glow = 0.1;
  c.glow_width = 6.0;
  return {"saturated core + one-sided glow", c};
}

double TruthScore::occluded_false_percent() const {
  return occluded_cells ? 100.0 * static_cast<double>(false_first + false_beyond) / static_cast<double>(occluded_cells) : 0.0;
}

double TruthScore::rms() const { return detected > outliers ? std::sqrt(sum_sq / static_cast<double>(detected - outliers)) : 0.0; }
double TruthScore::detection_percent() const { return expected ? 100.0 * static_cast<double>(detected) / static_cast<double>(expected) : 0.0; }
double TruthScore::outlier_percent() const { return detected ? 100.0 * static_cast<double>(outliers) / static_cast<double>(detected) : 0.0; }
double TruthScore::false_percent() const {
  return occluded ? 100.0 * static_cast<double>(false_detections) / static_cast<double>(occluded) : 0.0;
}
double TruthScore::bias() const { return detected > outliers ? bias_sum / static_cast<double>(detected - outliers) : 0.0; }

std::vector<TruthScore> score_synthetic(const SyntheticConfig& sc, const std::vector<ChainConfig>& chains, FrameSource* frames,
                                        SignificantBits* used) {
  SyntheticScanner scan(sc);
  FrameSource& source = frames != nullptr ? *frames : scan;
  BatchLayout l = source.frame_layout();
  l.frames = 30;
  Batch batch(l, &allocate_host);
  // The significant bits as a run decides them (acquisition/pixel_bits.h), for chains that leave them at 0.
  bool filled = false;
  std::optional<std::uint32_t> first_max;
  if (pixel_bits_need_data(0, source) && (filled = source.fill(batch))) first_max = max_pixel_value(batch);
  const SignificantBits bits = decide_pixel_bits(0, source, first_max);
  if (used != nullptr) *used = bits;
  std::vector<std::unique_ptr<BatchProcessor>> processors;
  std::vector<ProfileBatch> outs;
  for (ChainConfig chain : chains) {
    if (chain.adaptive.pixel_bits == 0) chain.adaptive.pixel_bits = bits.bits;
    processors.push_back(make_processor(Backend::Cpu, l, chain));
    outs.emplace_back(l.width, l.frames, output_slots(chain, l.frame_height), &allocate_host);
  }
  std::vector<TruthScore> scores(chains.size());
  std::uint64_t first_frame = 0;  // sources do not number batches (the pipeline does)
  for (; filled || source.fill(batch); first_frame += static_cast<std::uint64_t>(batch.frames)) {
    filled = false;
    for (std::size_t c = 0; c < chains.size(); ++c) processors[c]->process(batch, outs[c]);
    for (int f = 0; f < batch.frames; ++f) {
      const std::uint64_t frame = first_frame + static_cast<std::uint64_t>(f);
      for (int x = 0; x < l.width; ++x) {
        const double truth = scan.truth(frame, x);
        if (std::isnan(truth)) {  // every occluded cell: how far from the nearest lit column
          int d = 1;
          while (d < l.width && !((x - d >= 0 && !std::isnan(scan.truth(frame, x - d))) || (x + d < l.width && !std::isnan(scan.truth(frame, x + d)))))
            ++d;
          for (std::size_t c = 0; c < chains.size(); ++c) {
            ++scores[c].occluded_cells;
            if (outs[c].peaks(f, x) > 0) ++(d == 1 ? scores[c].false_first : scores[c].false_beyond);
          }
        }
        bool near_edge = false;
        for (int dx = -2; dx <= 2 && !near_edge; ++dx) {
          if (dx == 0 || x + dx < 0 || x + dx >= l.width) continue;
          const double n = scan.truth(frame, x + dx);
          near_edge = std::isnan(n) != std::isnan(truth) || (!std::isnan(n) && std::abs(n - truth) > 1.0);
        }
        for (std::size_t c = 0; c < chains.size(); ++c) {
          TruthScore& s = scores[c];
          const ProfileBatch& out = outs[c];
          if (near_edge) {
            ++s.edge_columns;
            continue;
          }
          const bool found = out.peaks(f, x) > 0;
          if (std::isnan(truth)) {
            ++s.occluded;
            s.false_detections += found;
            continue;
          }
          ++s.expected;
          if (!found) continue;
          ++s.detected;
          const double err = position_to_row(out.position[out.slot_index(f, 0, x)]) - truth;
          if (std::abs(err) > 1.0) {
            ++s.outliers;
            continue;
          }
          s.sum_sq += err * err;
          s.bias_sum += err;
          s.max_inlier = std::max(s.max_inlier, std::abs(err));
        }
      }
    }
  }
  return scores;
}

TruthScore score_synthetic(const SyntheticConfig& sc, const ChainConfig& chain) { return score_synthetic(sc, std::vector<ChainConfig>{chain})[0]; }

TruthScore score_replayed(const SyntheticConfig& sc, const ChainConfig& chain, const std::filesystem::path& path, bool bits_tags,
                          SignificantBits& used) {
  SyntheticScanner scan(sc);
  BatchLayout l = scan.frame_layout();
  l.frames = static_cast<int>(sc.frames);
  Batch batch(l, &allocate_host);
  if (!scan.fill(batch) || batch.frames != l.frames) throw std::runtime_error("score_replayed: the scanner rendered too few frames");
  io::RecordingWriteOptions o;
  o.compress = false;  // quicker; the tags are the same
  o.significant_bits = sc.bits == 16 ? 0 : sc.bits;
  o.bits_tags = bits_tags;
  io::write_recording(path, batch.pixels.data(), l.width, l.frame_height, sc.frames, l.format, o);
  FileSourceConfig fc;
  fc.path = path;
  fc.frame_height = l.frame_height;
  FileSource file(fc);
  return score_synthetic(sc, {chain}, &file, &used)[0];
}

std::vector<std::string> real_image_names() {
  return {"floor_block_red.png", "floor_blocks_step_red.png", "floor_red.png", "gravel_top_line_red.png", "gravel_bottom_line_red.png", "carpet_bricks_green.png",
          "print_board_red.png", "wood_slice_red.png"};
}

RealImage load_real_image(const std::string& name) {
  RealImage img;
  img.name = name;
  auto reader = io::open_image(std::filesystem::path(source_dir()) / "tests" / "data" / "real" / name);
  img.width = reader->info().width;
  img.height = static_cast<int>(reader->info().height);
  img.pixels.resize(static_cast<std::size_t>(img.width) * img.height);
  reader->read_rows(reinterpret_cast<std::byte*>(img.pixels.data()), img.height);
  return img;
}

std::vector<double> extract_real(const RealImage& image, const ChainConfig& chain, bool bits16) {
  BatchLayout l{image.width, image.height, 1, bits16 ? PixelFormat::Mono16 : PixelFormat::Mono8};
  Batch batch(l, &allocate_host);
  batch.frames = 1;
  for (std::size_t i = 0; i < image.pixels.size(); ++i) {
    if (bits16)
      reinterpret_cast<std::uint16_t*>(batch.pixels.data())[i] = static_cast<std::uint16_t>(image.pixels[i] * 257u);
    else
      reinterpret_cast<std::uint8_t*>(batch.pixels.data())[i] = image.pixels[i];
  }
  ProfileBatch out(l.width, 1, output_slots(chain, l.frame_height), &allocate_host);
  make_processor(Backend::Cpu, l, chain)->process(batch, out);
  std::vector<double> rows(static_cast<std::size_t>(l.width), std::numeric_limits<double>::quiet_NaN());
  for (int x = 0; x < l.width; ++x)
    if (out.peaks(0, x) > 0) rows[static_cast<std::size_t>(x)] = position_to_row(out.position[out.slot_index(0, 0, x)]);
  return rows;
}

std::vector<std::vector<double>> extract_all_real(const RealImage& image, const ChainConfig& chain) {
  BatchLayout l{image.width, image.height, 1, PixelFormat::Mono8};
  Batch batch(l, &allocate_host);
  batch.frames = 1;
  std::copy(image.pixels.begin(), image.pixels.end(), reinterpret_cast<std::uint8_t*>(batch.pixels.data()));
  ProfileBatch out(l.width, 1, output_slots(chain, l.frame_height), &allocate_host);
  make_processor(Backend::Cpu, l, chain)->process(batch, out);
  std::vector<std::vector<double>> rows(static_cast<std::size_t>(l.width));
  for (int x = 0; x < l.width; ++x)
    for (int s = 0; s < out.peaks(0, x); ++s) rows[static_cast<std::size_t>(x)].push_back(position_to_row(out.position[out.slot_index(0, s, x)]));
  return rows;
}

std::vector<double> steger_reference(const RealImage& image) {
  std::vector<double> px(image.pixels.begin(), image.pixels.end());
  return steger_centres(px, image.width, image.height);
}

ChainConfig old_default_chain() {
  ChainConfig c;
  c.blur_size = 5;
  c.column.method = ColumnMethod::Cog;
  c.column.threshold = 40;
  c.column.min_peak = 50;
  return c;
}

ChainConfig adaptive_chain(SubpixelEstimator estimator) {
  ChainConfig c;
  c.column.method = ColumnMethod::Adaptive;
  c.adaptive.estimator = estimator;
  return c;
}

ChainConfig neighbour_checked_chain() {
  ChainConfig c;
  c.neighbour_check.columns = 1;
  c.neighbour_check.step = 2.0;
  return c;
}

}  // namespace stripeline::test
