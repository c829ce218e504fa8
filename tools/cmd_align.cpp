// `stripeline align --target T.toml -H N --head NAME=RECORDING,CALIBRATION[,ROI_X,ROI_Y] ... [--reversed NAME] --out transforms.toml`:
// each head's recording of one common target (its cross-section known in the
// world frame), mapped through the head's own calibration, fitted to the
// target: the head-to-world transforms `stripeline merge` reads
// (calibration/head_alignment.h, docs/scale-out.md "Aligning heads").
// Exit 2 when a head cannot be fitted (one line naming the head).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "acquisition/file_source.h"
#include "calibration/head_alignment.h"
#include "core/errors.h"
#include "tools/commands.h"

namespace stripeline::tools {

namespace {

struct HeadScan {
  std::string name, recording, calibration;
  int roi_x = 0, roi_y = 0;
};

HeadScan parse_head(const std::string& s) {
  const char* expected = "NAME=RECORDING,CALIBRATION[,ROI_X,ROI_Y], e.g. left=left-target.tiff,left-cal.toml,0,428";
  const auto eq = s.find('=');
  if (eq == std::string::npos || eq == 0) throw InputError("--head '" + s + "' is not understood (expected " + expected + ")");
  HeadScan h;
  h.name = s.substr(0, eq);
  std::vector<std::string> parts;
  std::stringstream in(s.substr(eq + 1));
  for (std::string p; std::getline(in, p, ',');) parts.push_back(p);
  if ((parts.size() != 2 && parts.size() != 4) || parts[0].empty() || parts[1].empty())
    throw InputError("--head '" + s + "' is not understood (expected " + expected + ")");
  h.recording = parts[0];
  h.calibration = parts[1];
  if (parts.size() == 4) {
    try {
      std::size_t a = 0, b = 0;
      h.roi_x = std::stoi(parts[2], &a);
      h.roi_y = std::stoi(parts[3], &b);
      if (a != parts[2].size() || b != parts[3].size() || h.roi_x < 0 || h.roi_y < 0) throw std::invalid_argument("junk");
    } catch (const std::exception&) {
      throw InputError("--head '" + s + "': ROI offset '" + parts[2] + "," + parts[3] + "' is not understood (expected two whole pixels >= 0)");
    }
  }
  return h;
}

}  // namespace

Subcommand add_align(CLI::App& app) {
  auto* sub = app.add_subcommand("align", "Find each head's head-to-world transform from its scan of one common target (for stripeline merge)");
  struct Flags {
    std::vector<std::string> heads, reversed;
    std::string target, out;
    int frame_height = 0;
    bool quiet = false;
  };
  auto f = std::make_shared<Flags>();
  sub->add_option("--head", f->heads, "NAME=RECORDING,CALIBRATION[,ROI_X,ROI_Y]: a head's recording of the target and its calibration (repeat)")
      ->required();
  sub->add_option("--target", f->target, "The common target's cross-section in the world frame (TOML, configs/targets/)")->required();
  sub->add_option("--reversed", f->reversed,
                  "NAME of a head facing the other way (turned 180 deg about Z over the same laser plane; repeat): fitted on its points mirrored")
      ->type_name("NAME");
  sub->add_option("-H,--frame-height", f->frame_height, "Rows per frame of the recordings")->required();
  sub->add_option("-o,--out", f->out, "Head transforms file to write (TOML)")->required();
  sub->add_flag("-q,--quiet", f->quiet, "No summary lines");
  return {sub, [f] {
            const CalibrationTarget target = load_target(f->target);
            std::vector<HeadScan> scans;
            for (const auto& h : f->heads) scans.push_back(parse_head(h));
            for (const auto& n : f->reversed)
              if (std::none_of(scans.begin(), scans.end(), [&](const HeadScan& h) { return h.name == n; }))
                throw InputError("--reversed " + n + ": no --head of that name (expected the NAME of a --head)");
            HeadTransforms out;
            out.target = target.name;
            for (const HeadScan& h : scans) {
              if (out.find(h.name)) throw InputError("--head " + h.name + "=...: given twice (expected one per head)");
              const CalibrationFile cal = load_calibration(h.calibration);
              FileSourceConfig fc;
              fc.path = h.recording;
              fc.frame_height = f->frame_height;
              FileSource source(fc);
              const std::vector<PlanePoint> pts = target_scan_points(source, cal, h.roi_x, h.roi_y);
              AlignOptions o;
              o.reversed = std::find(f->reversed.begin(), f->reversed.end(), h.name) != f->reversed.end();
              const AlignResult r = align_to_target(pts, target, h.name, o);
              out.heads.push_back(r.transform);
              // A reversed head's in-plane turn is the fit's, after its turn about Z.
              const double turn = o.reversed ? r.transform.after(HeadTransform::facing_back("")).angle_deg() : r.transform.angle_deg();
              if (!f->quiet)
                std::printf("head %s:%s turn %.4f deg, shift X %.4f mm, Z %.4f mm; residual RMS %.4f mm (max %.4f) over %zu of %zu points\n",
                            h.name.c_str(), o.reversed ? " facing back (180 deg about Z), then" : "", turn, r.transform.t[0], r.transform.t[2],
                            r.rms_mm, r.max_mm, r.points_used, r.points_total);
            }
            save_head_transforms(f->out, out);
            if (!f->quiet) std::printf("wrote %s\n", f->out.c_str());
            return 0;
          }};
}

}  // namespace stripeline::tools
