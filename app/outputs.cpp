#include "app/outputs.h"

#include <unistd.h>

#include <algorithm>
#include <map>

#include "core/errors.h"
#include "io/atomic_file.h"
#include "core/profile_mapping.h"
#include "pipeline/background_sink.h"
#include "stages/heightmap_filters.h"

namespace stripeline {

namespace {

std::string lower_extension(const std::filesystem::path& p) {
  std::string ext = p.extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext;
}

// "" when `name` has the extension `kind` needs, else what was expected.
std::string extension_problem(const std::filesystem::path& name, OutputKind kind) {
  const std::string ext = lower_extension(name);
  switch (kind) {
    case OutputKind::Ply:
      return ext == ".ply" ? "" : "expected a .ply file name";
    case OutputKind::Image16:
    case OutputKind::Image8:
      return ext == ".png" || ext == ".tif" || ext == ".tiff" || ext == ".pgm" ? "" : "expected an image name: .png, .tif, .tiff or .pgm";
    default:
      return "";
  }
}

std::string shown_extension(const std::filesystem::path& name) {
  const std::string ext = name.extension().string();
  return ext.empty() ? "no extension" : "extension '" + ext + "'";
}

}  // namespace

void OutputConfig::validate() const {
  validate_height_bits(height_bits);
  const std::pair<const char*, std::pair<const std::string*, OutputKind>> names[] = {
      {"ply", {&ply, OutputKind::Ply}}, {"heightmap", {&heightmap, OutputKind::Image16}}, {"preview", {&preview, OutputKind::Image8}}};
  for (const auto& [key, v] : names) {
    if (v.first->empty()) continue;
    const std::string problem = extension_problem(*v.first, v.second);
    if (!problem.empty())
      throw ConfigError(std::string(key) + " = \"" + *v.first + "\": unsupported " + shown_extension(*v.first) + " (" + problem + ")");
  }
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

void check_output_path(const std::string& what, const std::filesystem::path& path, OutputKind kind,
                       const std::filesystem::path& will_create) {
  namespace fs = std::filesystem;
  auto fail = [&](const std::string& problem) { throw InputError(what + " '" + path.string() + "': " + problem); };
  if (path.empty() || !path.has_filename()) fail("not a file name (expected a path to a file, not a directory)");
  const bool to_stdout = path == "-";
  std::error_code ec;
  const fs::file_status st = to_stdout ? fs::file_status(fs::file_type::character) : fs::status(path, ec);
  const bool special = to_stdout || (fs::exists(st) && !fs::is_regular_file(st));
  if (!to_stdout || kind == OutputKind::Ply || kind == OutputKind::Image16 || kind == OutputKind::Image8) {
    const std::string problem = extension_problem(path, kind);
    if (!problem.empty()) fail("unsupported " + shown_extension(path) + " (" + problem + ")");
  }
  if (fs::is_directory(st)) fail("is a directory (expected a path to a file)");
  if (special) {
    if (!to_stdout && !fs::is_fifo(st) && !fs::is_character_file(st))
      fail("exists and is not a regular file, a FIFO or a character device (expected a file path)");
    const std::string ext = lower_extension(path);
    if (kind == OutputKind::Ply) fail("is a stream or device; a PLY must seek back into its output (expected a regular file path)");
    if ((kind == OutputKind::Image16 || kind == OutputKind::Image8) && (ext == ".tif" || ext == ".tiff"))
      fail("is a stream or device; a TIFF must seek back into its output (expected a regular file path)");
    if (!to_stdout && ::access(path.c_str(), W_OK) != 0) fail("cannot be opened for writing (no permission)");
    return;  // written in place: its directory is not written to
  }
  const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  if (!will_create.empty() && dir.lexically_normal() == (will_create / "x").parent_path().lexically_normal() && !fs::exists(dir, ec)) {
    fs::path up = dir;  // the output directory is made before writing: its nearest existing parent must allow it
    while (!up.empty() && !fs::exists(up, ec) && up.has_parent_path() && up.parent_path() != up) up = up.parent_path();
    if (up.empty() || !fs::exists(up, ec)) up = ".";
    if (!fs::is_directory(up, ec)) fail("cannot create the directory '" + dir.string() + "': '" + up.string() + "' is not a directory");
    if (::access(up.c_str(), W_OK | X_OK) != 0)
      fail("cannot create the directory '" + dir.string() + "': '" + up.string() + "' is not writable");
    return;
  }
  const fs::file_status ds = fs::status(dir, ec);
  if (!fs::exists(ds)) fail("directory '" + dir.string() + "' does not exist (expected an existing, writable directory)");
  if (!fs::is_directory(ds)) fail("'" + dir.string() + "' is not a directory (expected an existing, writable directory)");
  if (::access(dir.c_str(), W_OK | X_OK) != 0) fail("directory '" + dir.string() + "' is not writable (expected an existing, writable directory)");
}

void check_output_files(const OutputConfig& out, const std::string& prefix) {
  const std::pair<const char*, std::pair<const std::string*, OutputKind>> names[] = {
      {"PLY", {&out.ply, OutputKind::Ply}},
      {"height map", {&out.heightmap, OutputKind::Image16}},
      {"preview", {&out.preview, OutputKind::Image8}},
      {"summary", {&out.summary, OutputKind::Json}}};
  std::map<std::filesystem::path, std::string> seen;
  for (const auto& [what, v] : names) {
    if (v.first->empty()) continue;
    const std::filesystem::path p = out.resolve(prefix + *v.first);
    check_output_path(what, p, v.second, out.dir);
    if (p == "-") continue;
    const std::filesystem::path key = p.lexically_normal();
    if (auto it = seen.find(key); it != seen.end())
      throw InputError(std::string(what) + " '" + p.string() + "': the " + it->second + " is written there too (expected distinct output files)");
    seen.emplace(key, what);
  }
}

std::vector<std::filesystem::path> sweep_stale_outputs(const OutputConfig& out, const std::vector<std::filesystem::path>& more) {
  std::map<std::filesystem::path, std::vector<std::string>> by_dir;
  for (const std::string* name : {&out.ply, &out.heightmap, &out.preview, &out.summary}) {
    if (name->empty() || *name == "-") continue;
    const std::filesystem::path p = out.resolve(*name);
    by_dir[p.parent_path()].push_back(p.filename().string());
  }
  for (const auto& p : more) by_dir[p.parent_path()].push_back(p.filename().string());
  std::vector<std::filesystem::path> removed;
  for (const auto& [dir, names] : by_dir) {
    auto r = io::sweep_stale_temporaries(dir, names);
    removed.insert(removed.end(), r.begin(), r.end());
  }
  return removed;
}

OutputSinks make_output_sinks(const OutputConfig& out, const OutputOptions& options) {
  check_output_files(out, options.prefix);
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
