// The TIFF reader: strips and tiles decoded in parallel straight into the
// caller's rows.
//
// Accepted: 8/16-bit unsigned, 1 sample per pixel, min-is-black (or no
// photometric tag), strips or tiles, any compression libtiff was built with;
// every page (IFD) of a multi-page file, read one after the other as one tall
// recording (numpy/tifffile stacks: one frame or one block of frames per
// page); every page must have the width and depth of the first.
//
// How a read_rows() call is served: the rows asked for are cut into work
// items, decoded by oneTBB tasks (isolated: a waiting thread never picks up
// unrelated pipeline work) in any order, each writing only its own rows.
//  - uncompressed strips: positioned reads of the rows' bytes straight into
//    the destination (no strip buffer; a huge single strip is fine);
//  - Deflate strips and tiles (predictor none or horizontal): the compressed
//    bytes are read by offset, inflated by libdeflate (io/inflate.h)
//    straight into the
//    destination rows (a tile into a per-thread tile buffer, then its rows),
//    byte-swapped and un-predicted there;
//  - any other compression (LZW, PackBits, JPEG, ZSTD...), and any strip the
//    fast path finds odd (short, longer than its rows, a bad stream): libtiff
//    decodes it, on a TIFF handle owned by the decoding thread. libtiff's
//    message for a bad strip is therefore the one reported, as before.
// A strip or row of tiles that straddles the end of a request is decoded once
// into a small band cache and its rows handed out over two calls. Compressed
// strips larger than 64 MiB (one strip for a whole recording) are read
// scanline by scanline through libtiff instead, as they cannot be split.
//
// Memory: the destination, two band caches (one strip or row of tiles each)
// and, per thread, one compressed strip and one tile.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tbb/blocked_range.h>
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>
#include <tiffio.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "io/inflate.h"
#include "io/reader_common.h"
#include "io/tiff_support.h"

namespace stripeline::io::detail {
namespace {

namespace fs = std::filesystem;

// A compressed strip above this is read scanline by scanline (not cached).
constexpr std::uint64_t kMaxCachedStrip = std::uint64_t{64} << 20;

// One page (IFD) as the reader uses it. A "band" is a strip, or a row of tiles.
struct Page {
  std::int64_t first_row = 0;   // global row of the page's first row
  std::uint32_t height = 0;
  std::uint32_t band_rows = 0;  // rows per strip, or the tile length
  std::uint32_t bands = 0;
  std::uint32_t tile_width = 0;  // 0: strips
  std::uint32_t tiles_across = 1;
  std::int64_t first_band = 0;   // global band number of the page's first band
  std::size_t first_piece = 0;   // index in pieces_ of its first strip or tile
  std::uint16_t compression = COMPRESSION_NONE;
  std::uint16_t predictor = PREDICTOR_NONE;
  bool native = false;     // stripeline decodes it (else libtiff)
  bool scanlines = false;  // compressed strips too large to cache: libtiff, scanline by scanline
  bool tiled() const { return tile_width != 0; }
  bool uncompressed_strips() const { return native && !tiled() && compression == COMPRESSION_NONE; }
  std::uint32_t rows_in_band(std::uint32_t band) const { return std::min(band_rows, height - band * band_rows); }
};

struct Piece {
  std::uint64_t offset = 0;
  std::uint64_t bytes = 0;
};

// Per-thread decoding state, created on first use by each thread.
struct ThreadState {
  std::vector<std::byte> compressed;
  std::vector<std::byte> tile;
  std::unique_ptr<Inflater> inflater;
  // libtiff handle of this thread, for what stripeline does not decode itself.
  TiffMessages messages;
  std::unique_ptr<TiffOpenOptions> options;
  TIFF* tif = nullptr;
  int page = -1;
  ThreadState() = default;
  ThreadState(const ThreadState&) = delete;
  ThreadState& operator=(const ThreadState&) = delete;
  ~ThreadState() {
    if (tif != nullptr) TIFFClose(tif);
  }
};

// One unit of parallel work.
struct Item {
  enum Kind : std::uint8_t { Read, Piece } kind = Read;
  int page = 0;
  std::uint32_t band = 0;   // Piece: band within the page
  std::uint32_t tile = 0;   // Piece: tile within the band
  std::byte* target = nullptr;  // Read: first byte; Piece: the band's first row
  std::uint64_t offset = 0;     // Read: file offset
  std::size_t bytes = 0;        // Read: bytes
  std::int64_t row = 0;         // global row of the first byte (errors)
};

template <class T>
void undo_horizontal_predictor(std::byte* data, std::size_t width, std::size_t rows) {
  auto* p = reinterpret_cast<T*>(data);
  for (std::size_t r = 0; r < rows; ++r, p += width) {
    T acc = p[0];
    for (std::size_t x = 1; x < width; ++x) {
      acc = static_cast<T>(acc + p[x]);
      p[x] = acc;
    }
  }
}

class TiffReader final : public ReaderBase {
 public:
  TiffReader(fs::path path, const ImageReadOptions& options)
      : ReaderBase(std::move(path)), options_(options), open_options_(messages_) {
    check_input_file(path_);
    try {
      info_ = open();
    } catch (...) {
      close();  // the destructor does not run when a constructor throws
      throw;
    }
  }
  ~TiffReader() override { close(); }

 private:
  void close() noexcept {
    states_.clear();
    if (tif_ != nullptr) TIFFClose(tif_);
    tif_ = nullptr;
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }

  // libtiff's messages, without the "<file>: " prefix some of them carry
  // (the file is named at the start of our message already).
  std::string strip_prefix(std::string text) const {
    const std::string prefix = path_.string() + ": ";
    for (std::size_t at = text.find(prefix); at != std::string::npos; at = text.find(prefix, at)) text.erase(at, prefix.size());
    return text;
  }
  std::string tiff_text() const { return strip_prefix(messages_.text()); }
  [[noreturn]] void tiff_error(const std::string& what) const { input_error(path_, what + ": " + tiff_text()); }

  ImageInfo open() {
    close();
    messages_.clear();
    pages_.clear();
    pieces_.clear();
    min_encoded_ = decoded_ = 0;
    cache_[0].band = cache_[1].band = -1;
    // "m": no memory mapping; plain reads keep memory use to a strip.
    tif_ = TIFFOpenExt(path_.c_str(), "rm", open_options_.get());
    if (tif_ == nullptr) tiff_error("not a readable TIFF file");
    fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) input_error(path_, std::string("cannot open: ") + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd_, &st) == 0) {
      opened_size_ = st.st_size;
      opened_mtime_ = st.st_mtim;
    }
    swapped_ = TIFFIsByteSwapped(tif_) != 0;

    ImageInfo info;
    std::int64_t rows = 0;
    for (int page = 0;; ++page) {
      read_page(page, info, rows);
      messages_.clear();
      if (TIFFReadDirectory(tif_) != 1) {
        if (!messages_.errors.empty()) tiff_error("cannot read page " + std::to_string(page + 1));
        break;
      }
    }
    info.height = rows;
    info.pages = static_cast<int>(pages_.size());
    check_dimensions(path_, info.width, info.height);
    std::size_t band_bytes = 0;
    for (const Page& p : pages_) {
      if (!p.uncompressed_strips() && !p.scanlines) band_bytes = std::max<std::size_t>(band_bytes, p.band_rows * row_bytes_of(info));
    }
    for (auto& c : cache_) c.pixels.assign(band_bytes, std::byte{0});
    current_dir_ = -1;  // tif_ is at the last page now
    return info;
  }

  static std::size_t row_bytes_of(const ImageInfo& info) {
    return static_cast<std::size_t>(info.width) * bytes_per_pixel(info.format);
  }

  // Checks the current directory as page `index` and appends it to pages_.
  // The first page sets the width and depth every other page must have.
  void read_page(int index, ImageInfo& info, std::int64_t& rows) {
    const std::string where = index == 0 ? std::string() : "page " + std::to_string(index) + ": ";
    const auto fail = [&](const std::string& what) { input_error(path_, where + what); };
    std::uint32_t width = 0, height = 0;
    std::uint16_t spp = 1, bps = 1, sample_format = SAMPLEFORMAT_UINT, photometric = PHOTOMETRIC_MINISBLACK;
    if (TIFFGetField(tif_, TIFFTAG_IMAGEWIDTH, &width) != 1 || TIFFGetField(tif_, TIFFTAG_IMAGELENGTH, &height) != 1) {
      input_error(path_, where + "TIFF without image dimensions: " + tiff_text());
    }
    TIFFGetFieldDefaulted(tif_, TIFFTAG_SAMPLESPERPIXEL, &spp);
    TIFFGetFieldDefaulted(tif_, TIFFTAG_BITSPERSAMPLE, &bps);
    TIFFGetFieldDefaulted(tif_, TIFFTAG_SAMPLEFORMAT, &sample_format);
    const bool has_photometric = TIFFGetField(tif_, TIFFTAG_PHOTOMETRIC, &photometric) == 1;
    std::uint16_t compression = COMPRESSION_NONE;
    TIFFGetFieldDefaulted(tif_, TIFFTAG_COMPRESSION, &compression);

    if (spp != 1) {
      fail("unsupported TIFF with " + std::to_string(spp) + " samples per pixel (expected 1: a single-channel grayscale image)");
    }
    if (has_photometric && photometric != PHOTOMETRIC_MINISBLACK) {
      fail("unsupported TIFF photometric interpretation " + std::to_string(photometric) +
           (photometric == PHOTOMETRIC_MINISWHITE ? " (min-is-white)" : "") + " (expected min-is-black grayscale)");
    }
    if (bps != 8 && bps != 16) fail("unsupported TIFF bit depth " + std::to_string(bps) + " (expected 8 or 16)");
    if (sample_format != SAMPLEFORMAT_UINT) {
      fail("unsupported TIFF sample format " + std::to_string(sample_format) + " (expected unsigned integer samples)");
    }
    if (TIFFIsCODECConfigured(compression) == 0) {
      fail("unsupported TIFF compression " + std::to_string(compression) +
           " (expected a compression this libtiff can decode, e.g. none, LZW, deflate)");
    }
    const PixelFormat format = bps == 16 ? PixelFormat::Mono16 : PixelFormat::Mono8;
    if (index == 0) {
      check_dimensions(path_, width, height);
      info.width = static_cast<int>(width);
      info.format = format;
      char* description = nullptr;
      if (TIFFGetField(tif_, TIFFTAG_IMAGEDESCRIPTION, &description) == 1 && description != nullptr) {
        info.recorded_frame_height = recorded_frame_height(description, info.width);
      }
      info.significant_bits = tiff_significant_bits(tif_, format, description);
    } else if (static_cast<int>(width) != info.width || format != info.format) {
      input_error(path_, "page " + std::to_string(index) + " is " + std::to_string(width) + " pixels wide, " +
                             std::to_string(bps) + "-bit (expected " + std::to_string(info.width) + " pixels, " +
                             std::to_string(bytes_per_pixel(info.format) * 8) +
                             "-bit like page 0: every page of a recording has the same width and depth)");
    }
    if (height == 0) fail("image height 0 is out of range (expected >= 1)");
    const std::size_t bpp = bytes_per_pixel(format);
    const std::size_t rb = static_cast<std::size_t>(width) * bpp;

    Page p;
    p.first_row = rows;
    p.height = height;
    p.first_band = pages_.empty() ? 0 : pages_.back().first_band + pages_.back().bands;
    p.first_piece = pieces_.size();
    p.compression = compression;
    std::uint16_t predictor = PREDICTOR_NONE;
    if (TIFFGetField(tif_, TIFFTAG_PREDICTOR, &predictor) == 1) p.predictor = predictor;
    std::uint16_t fill_order = FILLORDER_MSB2LSB;
    TIFFGetFieldDefaulted(tif_, TIFFTAG_FILLORDER, &fill_order);
    const bool deflate = compression == COMPRESSION_ADOBE_DEFLATE || compression == COMPRESSION_DEFLATE;
    p.native = options_.native_tiff_codecs && fill_order == FILLORDER_MSB2LSB &&
               (compression == COMPRESSION_NONE ||
                (deflate && (p.predictor == PREDICTOR_NONE || p.predictor == PREDICTOR_HORIZONTAL)));
    if (compression == COMPRESSION_NONE) p.predictor = PREDICTOR_NONE;  // libtiff applies none without a codec

    {  // a tiny file claiming huge pages is refused before anything is sized by its header
      const long double decoded = static_cast<long double>(height) * rb;
      min_encoded_ += decoded / tiff_max_expansion(compression);
      decoded_ += decoded;
      check_claimed_size(path_, width, rows + height, decoded_, min_encoded_, static_cast<std::uintmax_t>(opened_size_),
                         compression == COMPRESSION_NONE ? std::string("uncompressed, cut short to less than 1/64 of it")
                                                         : "compression " + std::to_string(compression) + " expands at most " +
                                                               std::to_string(static_cast<long>(tiff_max_expansion(compression))) + ":1");
    }
    std::uint32_t pieces = 0;
    if (TIFFIsTiled(tif_) != 0) {
      std::uint32_t tw = 0, th = 0;
      if (TIFFGetField(tif_, TIFFTAG_TILEWIDTH, &tw) != 1 || TIFFGetField(tif_, TIFFTAG_TILELENGTH, &th) != 1 || tw == 0 ||
          th == 0) {
        fail("tiled TIFF without a valid tile size (expected TileWidth and TileLength)");
      }
      const std::uint64_t tile_bytes = static_cast<std::uint64_t>(TIFFTileSize64(tif_));
      const std::uint64_t band_bytes = static_cast<std::uint64_t>(th) * rb;
      constexpr std::uint64_t kLimit = std::uint64_t{256} << 20;
      if (tile_bytes == 0 || tile_bytes > kLimit || band_bytes > kLimit ||
          tile_bytes != static_cast<std::uint64_t>(tw) * th * bpp) {
        fail("unsupported TIFF tile size " + std::to_string(tw) + "x" + std::to_string(th) +
             " (expected tiles of at most 256 MiB per row of tiles)");
      }
      p.tile_width = tw;
      p.tiles_across = (width + tw - 1) / tw;
      p.bands = (height + th - 1) / th;
      p.band_rows = th;
      pieces = TIFFNumberOfTiles(tif_);
      if (pieces != p.tiles_across * p.bands) {
        fail("unsupported TIFF layout: " + std::to_string(pieces) + " tiles (expected " +
             std::to_string(p.tiles_across * p.bands) + ")");
      }
    } else {
      if (static_cast<std::uint64_t>(TIFFScanlineSize64(tif_)) != rb) {
        fail("unsupported TIFF layout: scanline of " + std::to_string(TIFFScanlineSize64(tif_)) + " bytes (expected " +
             std::to_string(rb) + ")");
      }
      std::uint32_t rps = 0;
      TIFFGetFieldDefaulted(tif_, TIFFTAG_ROWSPERSTRIP, &rps);
      p.band_rows = std::clamp<std::uint32_t>(rps, 1, height);
      p.bands = (height + p.band_rows - 1) / p.band_rows;
      pieces = TIFFNumberOfStrips(tif_);
      if (pieces < p.bands) {
        fail("unsupported TIFF layout: " + std::to_string(pieces) + " strips (expected " + std::to_string(p.bands) + ")");
      }
      p.scanlines = compression != COMPRESSION_NONE && static_cast<std::uint64_t>(p.band_rows) * rb > kMaxCachedStrip;
    }
    for (std::uint32_t i = 0; i < (p.tiled() ? pieces : p.bands); ++i) {
      int err = 0;
      Piece piece;
      piece.offset = TIFFGetStrileOffsetWithErr(tif_, i, &err);
      piece.bytes = err == 0 ? TIFFGetStrileByteCountWithErr(tif_, i, &err) : 0;
      if (err != 0) piece = Piece{};  // read through libtiff, which says what is wrong
      pieces_.push_back(piece);
    }
    pages_.push_back(p);
    rows += height;
  }

  // The page holding a global row.
  int page_of(std::int64_t row) const {
    const auto it = std::upper_bound(pages_.begin(), pages_.end(), row,
                                     [](std::int64_t r, const Page& p) { return r < p.first_row; });
    return static_cast<int>(it - pages_.begin()) - 1;
  }

  // ---------------------------------------------------------------------
  // Reading

  struct BandCache {
    std::int64_t band = -1;  // global band number held, -1: none
    std::vector<std::byte> pixels;
  };

  // A band of `page` is needed only in part: find it in the cache or pick a
  // slot for it (not `keep`, the slot another partial band of this call uses).
  int cache_slot(std::int64_t global_band, int keep, bool& hit) {
    for (int i = 0; i < 2; ++i) {
      if (cache_[i].band == global_band) {
        hit = true;
        return i;
      }
    }
    hit = false;
    const int slot = keep == 0 ? 1 : 0;
    cache_[slot].band = -1;  // until decoded
    return slot;
  }

  void do_read(std::byte* dst, std::int64_t rows) override {
    const std::size_t rb = row_bytes();
    const std::int64_t begin = next_row_, end = next_row_ + rows;
    items_.clear();
    read_chunk_ = read_chunk_bytes(static_cast<std::size_t>(rows) * rb);
    struct Partial {
      int page;
      std::uint32_t band;
      int slot;
      std::int64_t from, to;  // global rows wanted
    };
    Partial partials[2];
    int partial_count = 0, busy_slot = -1;
    std::vector<std::pair<int, std::int64_t>> scanline_segments;  // (page, first global row) of pages read by libtiff

    for (int pi = page_of(begin); pi < static_cast<int>(pages_.size()) && pages_[pi].first_row < end; ++pi) {
      const Page& p = pages_[pi];
      const std::int64_t from = std::max(begin, p.first_row);
      const std::int64_t to = std::min(end, p.first_row + p.height);
      std::byte* out = dst + static_cast<std::size_t>(from - begin) * rb;
      if (p.scanlines) {
        scanline_segments.emplace_back(pi, from);
        continue;
      }
      const auto b0 = static_cast<std::uint32_t>((from - p.first_row) / p.band_rows);
      const auto b1 = static_cast<std::uint32_t>((to - 1 - p.first_row) / p.band_rows);
      for (std::uint32_t b = b0; b <= b1; ++b) {
        const std::int64_t band_first = p.first_row + static_cast<std::int64_t>(b) * p.band_rows;
        const std::int64_t band_end = band_first + p.rows_in_band(b);
        const std::int64_t r0 = std::max(from, band_first), r1 = std::min(to, band_end);
        if (p.uncompressed_strips()) {
          const Piece& piece = pieces_[p.first_piece + b];
          if (piece.bytes < p.rows_in_band(b) * rb) {
            input_error(path_, "corrupt TIFF at row " + std::to_string(band_first) +
                                   (pages_.size() > 1 ? " (page " + std::to_string(pi) + ")" : "") + ": its strip holds " +
                                   std::to_string(piece.bytes) + " bytes (expected " + std::to_string(p.rows_in_band(b) * rb) +
                                   " for its " + std::to_string(p.rows_in_band(b)) + " rows)");
          }
          add_reads(pi, r0, (r0 - band_first) * static_cast<std::int64_t>(rb) + static_cast<std::int64_t>(piece.offset),
                    static_cast<std::size_t>(r1 - r0) * rb, out + static_cast<std::size_t>(r0 - from) * rb);
          continue;
        }
        std::byte* band_target = nullptr;
        if (r0 == band_first && r1 == band_end) {
          band_target = out + static_cast<std::size_t>(band_first - from) * rb;
        } else {
          bool hit = false;
          if (partial_count == 2) throw std::logic_error("TiffReader: more than two partial bands in one read");
          const int slot = cache_slot(p.first_band + b, busy_slot, hit);
          busy_slot = slot;
          partials[partial_count++] = Partial{pi, b, slot, r0, r1};
          if (hit) continue;
          band_target = cache_[slot].pixels.data();
        }
        for (std::uint32_t t = 0; t < (p.tiled() ? p.tiles_across : 1u); ++t) {
          Item item;
          item.kind = Item::Piece;
          item.page = pi;
          item.band = b;
          item.tile = t;
          item.target = band_target;
          item.row = band_first;
          items_.push_back(item);
        }
      }
    }

    for (const auto& [pi, from] : scanline_segments) {
      const Page& p = pages_[pi];
      const std::int64_t to = std::min(end, p.first_row + p.height);
      read_scanlines(pi, from - p.first_row, to - from, dst + static_cast<std::size_t>(from - begin) * rb);
    }
    run_items();
    for (int i = 0; i < partial_count; ++i) {
      const Partial& part = partials[i];
      const Page& p = pages_[part.page];
      BandCache& c = cache_[part.slot];
      c.band = p.first_band + part.band;
      const std::int64_t band_first = p.first_row + static_cast<std::int64_t>(part.band) * p.band_rows;
      std::memcpy(dst + static_cast<std::size_t>(part.from - begin) * rb,
                  c.pixels.data() + static_cast<std::size_t>(part.from - band_first) * rb,
                  static_cast<std::size_t>(part.to - part.from) * rb);
    }
  }

  // Rows [row, row + bytes / row_bytes) of an uncompressed strip at `offset`:
  // positioned reads straight into `out`, cut into chunks for parallelism.
  void add_reads(int page, std::int64_t row, std::int64_t offset, std::size_t bytes, std::byte* out) {
    // Merge with the previous read when the file and the destination continue it.
    if (!items_.empty()) {
      Item& last = items_.back();
      if (last.kind == Item::Read && last.page == page && last.offset + last.bytes == static_cast<std::uint64_t>(offset) &&
          last.target + last.bytes == out && last.bytes < read_chunk_) {
        const std::size_t take = std::min(bytes, read_chunk_ - last.bytes);
        last.bytes += take;
        offset += static_cast<std::int64_t>(take);
        out += take;
        row += static_cast<std::int64_t>(take / row_bytes());
        bytes -= take;
      }
    }
    while (bytes > 0) {
      Item item;
      item.kind = Item::Read;
      item.page = page;
      item.offset = static_cast<std::uint64_t>(offset);
      item.bytes = std::min(bytes, read_chunk_);
      item.target = out;
      item.row = row;
      items_.push_back(item);
      offset += static_cast<std::int64_t>(item.bytes);
      out += item.bytes;
      row += static_cast<std::int64_t>(item.bytes / row_bytes());
      bytes -= item.bytes;
    }
  }

  void run_items() {
    if (items_.empty()) return;
    struct Failure {
      std::size_t item = SIZE_MAX;
      std::string message;
    } failure;
    std::mutex failure_mutex;
    const auto body = [&](const tbb::blocked_range<std::size_t>& range) {
      ThreadState& ts = states_.local();
      for (std::size_t i = range.begin(); i != range.end(); ++i) {
        std::string error = run_item(ts, items_[i]);
        if (!error.empty()) {
          const std::lock_guard lock(failure_mutex);
          if (i < failure.item) failure = Failure{i, std::move(error)};
        }
      }
    };
    if (items_.size() == 1) {
      body(tbb::blocked_range<std::size_t>(0, 1));
    } else {
      tbb::this_task_arena::isolate(
          [&] { tbb::parallel_for(tbb::blocked_range<std::size_t>(0, items_.size(), 1), body); });
    }
    if (failure.item != SIZE_MAX) input_error(path_, failure.message);
  }

  std::string where(const Item& item, std::int64_t row) const {
    std::string s = "at row " + std::to_string(row);
    if (pages_.size() > 1) s += " (page " + std::to_string(item.page) + ")";
    return s;
  }

  // Decodes one item; returns the error message ("" when it succeeded).
  std::string run_item(ThreadState& ts, const Item& item) {
    const Page& p = pages_[static_cast<std::size_t>(item.page)];
    const bool wide = info_.format == PixelFormat::Mono16;
    if (item.kind == Item::Read) {
      const std::size_t got = pread_full(fd_, item.target, item.bytes, item.offset);
      if (got != item.bytes) {
        const int err = errno;
        const std::int64_t row = item.row + static_cast<std::int64_t>(got / row_bytes());
        return "corrupt or truncated TIFF " + where(item, row) + ": " +
               (err != 0 ? std::string("read error: ") + std::strerror(err)
                         : "the file ends inside the strip (got " + std::to_string(got) + " of " +
                               std::to_string(item.bytes) + " bytes at offset " + std::to_string(item.offset) + ")");
      }
      if (wide && swapped_) swap16(item.target, item.bytes / 2);
      return {};
    }

    const std::size_t rb = row_bytes();
    const std::size_t bpp = bytes_per_pixel(info_.format);
    const std::uint32_t rows = p.rows_in_band(item.band);
    const std::size_t piece_index = p.first_piece + static_cast<std::size_t>(item.band) * p.tiles_across + item.tile;
    // Where the piece decodes to: the band's rows themselves, or (a tile) this thread's tile buffer.
    std::byte* out = item.target;
    std::size_t out_bytes = static_cast<std::size_t>(rows) * rb;
    std::size_t out_width = static_cast<std::size_t>(info_.width);
    std::size_t out_rows = rows;
    if (p.tiled()) {
      out_width = p.tile_width;
      out_rows = p.band_rows;
      out_bytes = out_width * out_rows * bpp;
      if (ts.tile.size() < out_bytes) ts.tile.resize(out_bytes);
      out = ts.tile.data();
    }

    if (!(p.native && decode_native(ts, p, pieces_[piece_index], out, out_bytes, out_width, out_rows))) {
      // libtiff: other codecs, and whatever the fast path found odd.
      if (const std::string error = decode_libtiff(ts, item, static_cast<std::uint32_t>(piece_index - p.first_piece), out, out_bytes);
          !error.empty()) {
        if (p.tiled()) {
          return "corrupt or truncated TIFF in the tile at row " + std::to_string(item.row) + ", column " +
                 std::to_string(item.tile * p.tile_width) + (pages_.size() > 1 ? " (page " + std::to_string(item.page) + ")" : "") +
                 ": " + error;
        }
        return "corrupt or truncated TIFF " + where(item, item.row) + ": " + error;
      }
    }
    if (p.tiled()) {
      const std::size_t x = static_cast<std::size_t>(item.tile) * p.tile_width;
      const std::size_t cols = std::min<std::size_t>(p.tile_width, static_cast<std::size_t>(info_.width) - x);
      for (std::uint32_t r = 0; r < rows; ++r) {
        std::memcpy(item.target + r * rb + x * bpp, out + static_cast<std::size_t>(r) * p.tile_width * bpp, cols * bpp);
      }
    }
    return {};
  }

  // The fast path: read by offset, inflate with libdeflate, swap, un-predict.
  // False (nothing reported) when the piece is not exactly what it should be.
  bool decode_native(ThreadState& ts, const Page& p, const Piece& piece, std::byte* out, std::size_t out_bytes,
                     std::size_t width, std::size_t rows) {
    if (piece.bytes == 0) return false;
    const bool wide = info_.format == PixelFormat::Mono16;
    if (p.compression == COMPRESSION_NONE) {
      if (piece.bytes < out_bytes || pread_full(fd_, out, out_bytes, piece.offset) != out_bytes) return false;
    } else {
      if (piece.bytes > (std::uint64_t{1} << 30)) return false;
      if (ts.compressed.size() < piece.bytes) ts.compressed.resize(static_cast<std::size_t>(piece.bytes));
      if (pread_full(fd_, ts.compressed.data(), static_cast<std::size_t>(piece.bytes), piece.offset) != piece.bytes) return false;
      if (!ts.inflater) ts.inflater = std::make_unique<Inflater>();
      if (!ts.inflater->zlib(ts.compressed.data(), static_cast<std::size_t>(piece.bytes), out, out_bytes)) return false;
    }
    if (wide && swapped_) swap16(out, out_bytes / 2);
    if (p.predictor == PREDICTOR_HORIZONTAL) {
      if (wide) {
        undo_horizontal_predictor<std::uint16_t>(out, width, rows);
      } else {
        undo_horizontal_predictor<std::uint8_t>(out, width, rows);
      }
    }
    return true;
  }

  // libtiff decodes the strip or tile on this thread's own handle.
  std::string decode_libtiff(ThreadState& ts, const Item& item, std::uint32_t piece, std::byte* out, std::size_t out_bytes) {
    if (ts.tif == nullptr) {
      ts.options = std::make_unique<TiffOpenOptions>(ts.messages);
      ts.tif = TIFFOpenExt(path_.c_str(), "rm", ts.options->get());
      ts.page = 0;
      if (ts.tif == nullptr) return "cannot open the file again: " + strip_prefix(ts.messages.text());
    }
    ts.messages.clear();
    if (ts.page != item.page) {
      if (TIFFSetDirectory(ts.tif, static_cast<tdir_t>(item.page)) != 1) {
        ts.page = -1;
        return "cannot read page " + std::to_string(item.page) + ": " + strip_prefix(ts.messages.text());
      }
      ts.page = item.page;
    }
    const tmsize_t n = pages_[static_cast<std::size_t>(item.page)].tiled()
                           ? TIFFReadEncodedTile(ts.tif, piece, out, static_cast<tmsize_t>(out_bytes))
                           : TIFFReadEncodedStrip(ts.tif, piece, out, static_cast<tmsize_t>(out_bytes));
    if (n < 0) return strip_prefix(ts.messages.text());
    if (static_cast<std::size_t>(n) != out_bytes) {
      return "the strip decodes to " + std::to_string(n) + " bytes (expected " + std::to_string(out_bytes) + ")";
    }
    return {};
  }

  // Compressed strips too large to cache: libtiff, scanline by scanline, on
  // the reader's own handle (as the sequential reader always did).
  void read_scanlines(int page, std::int64_t first, std::int64_t rows, std::byte* dst) {
    if (current_dir_ != page) {
      messages_.clear();
      if (TIFFSetDirectory(tif_, static_cast<tdir_t>(page)) != 1) tiff_error("cannot read page " + std::to_string(page));
      current_dir_ = page;
    }
    const std::size_t rb = row_bytes();
    for (std::int64_t i = 0; i < rows; ++i) {
      messages_.clear();
      if (TIFFReadScanline(tif_, dst + static_cast<std::size_t>(i) * rb, static_cast<std::uint32_t>(first + i), 0) < 0) {
        const std::int64_t row = pages_[static_cast<std::size_t>(page)].first_row + first + i;
        input_error(path_, "corrupt or truncated TIFF at row " + std::to_string(row) +
                               (pages_.size() > 1 ? " (page " + std::to_string(page) + ")" : "") + ": " + tiff_text());
      }
    }
  }

  // Rows are addressed by their strip or tile (and libtiff's scanline path
  // seeks itself): nothing before the next read is decoded.
  void do_skip(std::int64_t) override {}

  void do_rewind() override {
    // An unchanged file keeps its tables; a changed one is opened again and
    // must still describe the same image.
    struct stat st {};
    if (fd_ >= 0 && ::stat(path_.c_str(), &st) == 0 && st.st_size == opened_size_ &&
        st.st_mtim.tv_sec == opened_mtime_.tv_sec && st.st_mtim.tv_nsec == opened_mtime_.tv_nsec) {
      return;
    }
    check_same(open());
  }

  ImageReadOptions options_;
  TiffMessages messages_;
  TiffOpenOptions open_options_;
  TIFF* tif_ = nullptr;  // directories, and the scanline path
  int current_dir_ = -1;
  int fd_ = -1;          // positioned reads, shared by the decoding threads
  off_t opened_size_ = 0;
  long double min_encoded_ = 0, decoded_ = 0;  // pages read so far: the fewest bytes they fit in, their decoded size
  timespec opened_mtime_{};
  bool swapped_ = false;
  std::vector<Page> pages_;
  std::vector<Piece> pieces_;
  BandCache cache_[2];
  std::vector<Item> items_;
  std::size_t read_chunk_ = 0;  // uncompressed rows are read in pieces of this size, in parallel
  tbb::enumerable_thread_specific<ThreadState> states_;
};

}  // namespace

std::unique_ptr<ImageReader> open_tiff(const fs::path& path, const ImageReadOptions& options) {
  return std::make_unique<TiffReader>(path, options);
}

}  // namespace stripeline::io::detail
