// `stripeline filter INPUT OUTPUT STEP...`: apply height-map filters
// (stages/heightmap_filters.h, docs/heightmap-filters.md) to a 16-bit PNG or
// TIFF height map, in the order given. The output is 8-bit when the last step
// is --to8, else 16-bit.
//
// CLI11 does not keep the interleaving of repeated options, so the steps are
// taken from the subcommand's remaining arguments, which keep their order.
#include <cctype>
#include <chrono>
#include <cstdio>
#include <limits>
#include <vector>

#include "core/errors.h"
#include "io/image_reader.h"
#include "io/image_writer.h"
#include "stages/heightmap_filters.h"
#include "tools/commands.h"

namespace stripeline::tools {

namespace {

bool is_step(const std::string& a) {
  static const char* names[] = {"--median", "--dilate-h", "--dilate-v", "--erode-h", "--erode-v", "--to8"};
  for (const char* n : names) {
    const std::string s(n);
    if (a == s || a.starts_with(s + "=")) return true;
  }
  return false;
}

}  // namespace

Subcommand add_filter(CLI::App& app) {
  auto* sub = app.add_subcommand("filter",
                                 "Filter a 16-bit height map: filter INPUT OUTPUT STEP... with steps --median K (odd 3..15), "
                                 "--dilate-h L, --dilate-v L, --erode-h L, --erode-v L (1..255), --to8 MIN:MAX (last), in order");
  struct Flags {
    std::string backend = "auto";
  };
  auto f = std::make_shared<Flags>();
  sub->add_option("--backend", f->backend, "auto, cpu or cuda")->capture_default_str();
  sub->allow_extras();
  return {sub, [f, sub] {
            const std::vector<std::string> rest = sub->remaining();
            std::vector<std::string> positional, step_args;
            for (std::size_t i = 0; i < rest.size(); ++i) {
              if (is_step(rest[i])) {
                step_args.push_back(rest[i]);
                if (rest[i].find('=') == std::string::npos) {
                  if (i + 1 >= rest.size()) throw InputError("filter step '" + rest[i] + "' needs a value");
                  step_args.push_back(rest[++i]);
                }
              } else if (rest[i].starts_with("--") || (rest[i].size() > 1 && rest[i][0] == '-' && !std::isdigit(static_cast<unsigned char>(rest[i][1])))) {
                throw InputError("filter: unknown option '" + rest[i] +
                                 "' (expected --median, --dilate-h, --dilate-v, --erode-h, --erode-v, --to8 or --backend)");
              } else {
                positional.push_back(rest[i]);
              }
            }
            if (positional.size() != 2)
              throw InputError("filter: expected INPUT and OUTPUT height maps, got " + std::to_string(positional.size()) + " file names");
            const auto steps = parse_filter_steps(step_args);
            const Backend backend = parse_backend(f->backend);

            auto reader = io::open_image(positional[0]);
            const auto info = reader->info();
            if (info.format != PixelFormat::Mono16)
              throw InputError(positional[0] + ": " + to_string(info.format) + " image (expected a 16-bit height map)");
            if (info.height < 1 || info.height > std::numeric_limits<int>::max() || info.width < 1)
              throw InputError(positional[0] + ": " + std::to_string(info.width) + "x" + std::to_string(info.height) +
                               " (expected a non-empty height map)");
            const int width = info.width, height = static_cast<int>(info.height);
            std::vector<std::uint16_t> in(static_cast<std::size_t>(width) * height);
            reader->read_rows(reinterpret_cast<std::byte*>(in.data()), height);

            auto filter = make_heightmap_filter(backend, width, height, steps);
            std::vector<std::uint16_t> out(in.size());
            const auto t0 = std::chrono::steady_clock::now();
            filter->run(in.data(), out.data());
            const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
            const PixelFormat out_format = filter->output_8bit() ? PixelFormat::Mono8 : PixelFormat::Mono16;
            io::write_image(positional[1], out.data(), width, height, out_format);
            std::string chain;
            for (const auto& s : steps) chain += (chain.empty() ? "" : ", ") + describe(s);
            std::printf("wrote %s: %dx%d %s (%s; %s backend, %.2f ms)\n", positional[1].c_str(), width, height, to_string(out_format),
                        chain.c_str(), to_string(filter->backend()), ms);
            return 0;
          }};
}

}  // namespace stripeline::tools
