// Colour TIFF recordings (RGB or RGBA, 8/16-bit, contiguous samples, in
// strips): read scanline by scanline through libtiff and mixed to grey
// (channel_mix.h). Colour recordings are for trying stripeline on photographs
// and cameras without a mono mode; a production recording is grey and takes
// the parallel path of tiff_reader.cpp. One page.
#include <tiffio.h>

#include <string>
#include <vector>

#include "io/channel_mix.h"
#include "io/reader_common.h"
#include "io/tiff_support.h"

namespace stripeline::io::detail {
namespace {

namespace fs = std::filesystem;

class ColourTiffReader final : public ReaderBase {
 public:
  ColourTiffReader(fs::path path, ChannelMix channel) : ReaderBase(std::move(path)), channel_(std::move(channel)), open_options_(messages_) {
    check_input_file(path_);
    try {
      info_ = open();
    } catch (...) {
      close();
      throw;
    }
  }
  ~ColourTiffReader() override { close(); }

 private:
  void close() noexcept {
    if (tif_ != nullptr) TIFFClose(tif_);
    tif_ = nullptr;
  }

  [[noreturn]] void tiff_error(const std::string& what) const { input_error(path_, what + ": " + messages_.text()); }

  ImageInfo open() {
    close();
    messages_.clear();
    tif_ = TIFFOpenExt(path_.c_str(), "rm", open_options_.get());
    if (tif_ == nullptr) tiff_error("not a readable TIFF file");
    std::uint32_t width = 0, height = 0;
    std::uint16_t spp = 1, bps = 8, planar = PLANARCONFIG_CONTIG, sample_format = SAMPLEFORMAT_UINT;
    if (TIFFGetField(tif_, TIFFTAG_IMAGEWIDTH, &width) != 1 || TIFFGetField(tif_, TIFFTAG_IMAGELENGTH, &height) != 1)
      tiff_error("TIFF without image dimensions");
    TIFFGetFieldDefaulted(tif_, TIFFTAG_SAMPLESPERPIXEL, &spp);
    TIFFGetFieldDefaulted(tif_, TIFFTAG_BITSPERSAMPLE, &bps);
    TIFFGetFieldDefaulted(tif_, TIFFTAG_PLANARCONFIG, &planar);
    TIFFGetFieldDefaulted(tif_, TIFFTAG_SAMPLEFORMAT, &sample_format);
    if (spp < 2 || spp > 4) input_error(path_, "unsupported TIFF with " + std::to_string(spp) + " samples per pixel (expected 1 grey, 2 grey+alpha, 3 RGB or 4 RGBA)");
    if (bps != 8 && bps != 16) input_error(path_, "unsupported TIFF bit depth " + std::to_string(bps) + " (expected 8 or 16)");
    if (sample_format != SAMPLEFORMAT_UINT) input_error(path_, "unsupported TIFF sample format " + std::to_string(sample_format) + " (expected unsigned integer samples)");
    if (planar != PLANARCONFIG_CONTIG) input_error(path_, "colour TIFF with separate planes (expected interleaved samples, PlanarConfiguration 1)");
    if (TIFFIsTiled(tif_) != 0) input_error(path_, "tiled colour TIFF (expected strips; convert it to grey or to strips)");
    if (TIFFReadDirectory(tif_) == 1) input_error(path_, "multi-page colour TIFF (expected one page; write the frames as grey pages)");
    TIFFSetDirectory(tif_, 0);
    check_dimensions(path_, width, height);
    channels_ = spp;
    row_.assign(static_cast<std::size_t>(TIFFScanlineSize64(tif_)), std::byte{0});
    if (row_.size() != static_cast<std::size_t>(width) * spp * (bps / 8)) input_error(path_, "unexpected scanline size " + std::to_string(row_.size()));
    ImageInfo info{static_cast<int>(width), static_cast<std::int64_t>(height), bps == 16 ? PixelFormat::Mono16 : PixelFormat::Mono8};
    char* description = nullptr;
    if (TIFFGetField(tif_, TIFFTAG_IMAGEDESCRIPTION, &description) == 1 && description != nullptr)
      info.recorded_frame_height = recorded_frame_height(description, info.width);
    info.significant_bits = tiff_significant_bits(tif_, info.format, description);
    return info;
  }

  void do_read(std::byte* dst, std::int64_t rows) override {
    const std::size_t rb = row_bytes();
    for (std::int64_t r = 0; r < rows; ++r) {
      const auto row = static_cast<std::uint32_t>(next_row_ + r);
      messages_.clear();
      if (TIFFReadScanline(tif_, row_.data(), row, 0) != 1) tiff_error("cannot read row " + std::to_string(row));
      // libtiff returns samples in the machine's byte order.
      mix_to_grey(row_.data(), channels_, static_cast<std::size_t>(info_.width), info_.format == PixelFormat::Mono16, channel_,
                  dst + static_cast<std::size_t>(r) * rb);
    }
  }

  void do_rewind() override { check_same(open()); }
  void do_skip(std::int64_t) override {}  // TIFFReadScanline goes to the row's strip itself

  ChannelMix channel_;
  TiffMessages messages_;
  TiffOpenOptions open_options_;
  TIFF* tif_ = nullptr;
  int channels_ = 3;
  std::vector<std::byte> row_;
};

}  // namespace

bool tiff_is_colour(const fs::path& path) {
  TiffMessages messages;
  TiffOpenOptions options(messages);
  TIFF* tif = TIFFOpenExt(path.c_str(), "rm", options.get());
  if (tif == nullptr) return false;  // the grey reader reports why
  std::uint16_t spp = 1;
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &spp);
  TIFFClose(tif);
  return spp >= 2 && spp <= 4;
}

std::unique_ptr<ImageReader> open_colour_tiff(const fs::path& path, const ImageReadOptions& options) {
  return std::make_unique<ColourTiffReader>(path, options.channel);
}

}  // namespace stripeline::io::detail
