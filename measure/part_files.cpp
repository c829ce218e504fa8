#include "measure/part_files.h"

#include <cmath>
#include <cstdio>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/errors.h"
#include "io/float_tiff_writer.h"
#include "io/ply_writer.h"
#include "kernels/rectify.h"

namespace stripeline::measure {

void write_part_files(const Part& part, const PartFileOptions& o) {
  if (o.dir.empty() || part.rows.empty()) return;
  char name[32];
  std::snprintf(name, sizeof name, "part-%06llu", static_cast<unsigned long long>(part.id));
  const std::filesystem::path base = o.dir / name;
  {
    io::PlyWriter ply(base.string() + ".ply", io::PlyEncoding::BinaryLittleEndian,
                      {"stripeline measured part " + std::to_string(part.id), "units " + part.units});
    std::vector<io::PlyVertex> v;
    for (const auto& r : part.rows) {
      v.clear();
      for (std::size_t i = 0; i < r.x.size(); ++i) {
        io::PlyVertex p;
        p.x = r.x[i];
        p.y = r.y;
        p.z = r.z[i];
        v.push_back(p);
      }
      ply.write(v.data(), v.size());
    }
    ply.finish();
  }
  if (!(part.box.x_max > part.box.x_min)) return;  // no point above the threshold: no grid
  kernels::RectifyGrid g;
  g.x_min = std::floor(part.box.x_min / o.dx) * o.dx;
  g.x_max = std::ceil(part.box.x_max / o.dx) * o.dx;
  g.dx = o.dx;
  g.rule = kernels::RectifyRule::Mean;
  g.validate();
  const int bins = g.bins();
  std::vector<float> z(static_cast<std::size_t>(bins) * part.rows.size()), key(bins);
  std::vector<std::uint32_t> n(bins);
  for (std::size_t r = 0; r < part.rows.size(); ++r) {
    const kernels::RectifyAccumulator acc{z.data() + r * bins, key.data(), n.data()};
    acc.clear(bins);
    for (std::size_t i = 0; i < part.rows[r].x.size(); ++i) acc.add(g, bins, part.rows[r].x[i], part.rows[r].z[i]);
    acc.finish(g, bins);
  }
  const nlohmann::json d = {{"stripeline", "measured-part"}, {"part", part.id}, {"units", part.units},
                            {"values", "Z, NaN = no data"}, {"grid", {{"x_min", g.x_min}, {"dx", g.dx}, {"bins", bins}, {"rule", "mean"}}},
                            {"rows", {{"y_first", part.y_start()}, {"pitch", part.row_pitch}}}};
  io::write_float_tiff(base.string() + ".tif", z.data(), bins, static_cast<std::int64_t>(part.rows.size()), d.dump());
}

}  // namespace stripeline::measure
