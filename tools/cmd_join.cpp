// stripeline join SHARD... --out FILE: the outputs of a replay's parts
// (`replay --frames START:END`, one per task of a Slurm job array) joined into
// the file one replay writes, byte for byte (io/shard_join.h; docs/scale-out.md).
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "io/shard_join.h"
#include "tools/commands.h"

namespace stripeline::tools {

Subcommand add_join(CLI::App& app) {
  auto* cmd = app.add_subcommand("join", "Join the outputs of replay --frames parts (PLYs, height maps, range maps or XYZ TIFFs, one kind "
                                         "per call) into the file one replay writes, byte for byte");
  struct Flags {
    std::vector<std::string> parts;
    std::string out;
    bool quiet = false;
  };
  auto f = std::make_shared<Flags>();
  cmd->add_option("parts", f->parts, "The parts' files, in any order (their metadata says which frames each holds)")->required();
  cmd->add_option("-o,--out", f->out, "The joined file (same format as the parts: .ply, .png, .tif)")->required();
  cmd->add_flag("-q,--quiet", f->quiet, "No summary line");
  return {cmd, [f] {
            const std::vector<std::filesystem::path> parts(f->parts.begin(), f->parts.end());
            const io::JoinResult r = io::join_shards(parts, f->out);
            if (!f->quiet)
              std::printf("joined %zu part%s: %s, %llu %s, frames %llu:%llu of %llu%s -> %s\n", r.parts, r.parts == 1 ? "" : "s",
                          io::to_string(r.kind), static_cast<unsigned long long>(r.items),
                          r.kind == io::ShardKind::PointCloud ? "vertices" : "rows", static_cast<unsigned long long>(r.frames.start),
                          static_cast<unsigned long long>(r.frames.end), static_cast<unsigned long long>(r.frames.of),
                          r.frames.whole() ? " (the whole recording)" : "", f->out.c_str());
            return 0;
          }};
}

}  // namespace stripeline::tools
