#include "app/outputs.h"

#include "core/errors.h"
#include "core/profile_mapping.h"
#include "pipeline/background_sink.h"
#include "stages/heightmap_filters.h"

namespace stripeline {

void OutputConfig::validate() const {
  validate_height_bits(height_bits);
  if (!heightmap_filters.empty()) {
    try {
      parse_filter_step_list(heightmap_filters);
    } catch (const InputError& e) {
      throw ConfigError(std::string("heightmap_filters: ") + e.what());
    }
  }
}

std::filesystem::path OutputConfig::resolve(const std::string& name) const {
  std::filesystem::path p(name);
  return p.is_absolute() ? p : dir / p;
}

std::vector<ProfileSink*> OutputSinks::all() const {
  std::vector<ProfileSink*> v;
  for (const auto& s : owned) v.push_back(s.get());
  return v;
}

void create_output_dir(const std::filesystem::path& dir) {
  if (dir.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir))
    throw InputError(dir.string() + ": cannot create the output directory (" + (ec ? ec.message() : "not a directory") + ")");
}

PublisherConfig publisher_for_outputs(PublisherConfig p, const OutputConfig& output, Backend filter_backend) {
  p.height_bits = output.height_bits;
  p.heightmap_filters = output.heightmap_filters;
  p.filter_backend = resolve_backend(filter_backend);
  return p;
}

OutputSinks make_output_sinks(const OutputConfig& out, const OutputOptions& options) {
  OutputSinks sinks;
  const bool files = !out.ply.empty() || !out.heightmap.empty() || !out.preview.empty() || !out.xyz_tiff.empty();
  if (files || !out.summary.empty()) create_output_dir(out.dir);
  auto named = [&](const std::string& name) { return name.empty() ? std::filesystem::path() : out.resolve(options.prefix + name); };
  if (!out.ply.empty()) {
    sinks.files.push_back(named(out.ply));
    auto ply = std::make_unique<PlySink>(sinks.files.back(), out.ply_encoding);
    sinks.ply = ply.get();
    sinks.owned.push_back(std::make_unique<BackgroundSink>(std::move(ply), "PLY writer"));
  }
  if (!out.heightmap.empty() || !out.preview.empty()) {
    const auto hm = named(out.heightmap), pv = named(out.preview);
    if (!hm.empty()) sinks.files.push_back(hm);
    if (!pv.empty()) sinks.files.push_back(pv);
    auto sink = std::make_unique<HeightMapSink>(hm, pv, out.height_bits, options.expected_rows);
    if (!out.heightmap_filters.empty()) sink->set_filters(out.heightmap_filters, options.filter_backend);
    sinks.heightmap = sink.get();
    sinks.owned.push_back(std::make_unique<BackgroundSink>(std::move(sink), "height-map writer"));
  }
  if (!out.xyz_tiff.empty()) {
    const auto path = named(out.xyz_tiff);
    const std::string ext = path.extension().string();
    if (ext != ".tif" && ext != ".tiff")
      throw ConfigError("output.xyz_tiff: '" + out.xyz_tiff + "' is not a TIFF name (expected .tif or .tiff)");
    sinks.files.push_back(path);
    auto xyz = std::make_unique<XyzTiffSink>(path, options.expected_rows);
    sinks.xyz = xyz.get();
    sinks.owned.push_back(std::make_unique<BackgroundSink>(std::move(xyz), "XYZ TIFF writer"));
  }
  if (options.publisher) {
    auto p = std::make_unique<Publisher>(publisher_for_outputs(*options.publisher, out, options.filter_backend));
    sinks.publisher = p.get();
    sinks.owned.push_back(std::move(p));
  }
  return sinks;
}

}  // namespace stripeline
